"""The jobs ``ModelWrapper`` delegates, one module each.

``messages``: the shape of OpenAI-style message lists; ``sampling_args``: keyword
arguments into ``SamplingParams``; ``chat_prompts``: chat-template rendering and the
bridging of a continued conversation to the ids sampled before; ``experiences``:
completions into Experiences; ``retokenized``: a finished conversation re-tokenized
into one Experience (Trinity-RFT's way, for turns that were not recorded);
``inference_config``: the settings Trinity-RFT workflows read as ``model.config``;
``requests``: engine requests in flight, their
timeouts and cancellation; ``openai_access``: the slot through which the wrapper
reaches the OpenAI protocol package (``reinforge.models.openai_api``), which sits on
top of it. None of them imports ``model_wrapper``.
"""
