"""A test-only workflow (copied into a test's folder and loaded as a config plugin):
reward 1 when the first sampled token id is even, so the tiny random model's groups
have reward variance and a GRPO step on them has nonzero advantages."""

from reinforge import Workflow


class Parity(Workflow):
    """Reward 1 when the first sampled token id is even."""

    can_repeat = True

    def run(self):
        exps = self.model.generate(["Q" + str(self.task.raw_task["question"])], n=self.repeat_times)
        for i, exp in enumerate(exps):
            exp.reward = float(int(exp.tokens[exp.prompt_length]) % 2 == 0)
            exp.eid.run = self.run_id_base + i
        return exps
