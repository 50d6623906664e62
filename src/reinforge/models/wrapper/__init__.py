"""The jobs ``ModelWrapper`` delegates, one module each.

``sender``: prompts into tracked engine requests and the replies into Experiences
(the engine side of every ``chat``/``generate``/``logprobs`` call); ``call_history``:
the experiences recorded for ``extract_experience_from_history``; ``messages``: the
shape of OpenAI-style message lists; ``sampling_args``: keyword arguments into
``SamplingParams``, and a task's ``rollout_args`` into keyword arguments
(``rollout_kwargs``); ``chat_prompts``: chat-template rendering and the bridging of a
continued conversation to the ids sampled before (``model.chat_prompts``);
``experiences``: completions into Experiences; ``retokenized``: a finished
conversation re-tokenized into one Experience (Trinity-RFT's way, for turns that
were not recorded); ``multimodal_chat``: the processor's prompt for messages with
images; ``inference_config``: the settings Trinity-RFT workflows read as
``model.config``; ``requests``: engine requests in flight, their timeouts and
cancellation; ``openai_access``: the slot through which the wrapper reaches the
OpenAI protocol package (``reinforge.models.openai_api``), which sits on top of it.
None of them imports ``model_wrapper``.
"""
