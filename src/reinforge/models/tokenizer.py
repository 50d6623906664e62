"""Tokenizer adapters: chat templating and text <-> ids, behind one small interface.

``HFChatTokenizer`` wraps a transformers tokenizer (its own chat template).
``ByteTokenizer`` is a dependency-free byte-level tokenizer with a ChatML-style
template, used by the mock engine so tests and benchmarks run in microseconds.
"""

from __future__ import annotations

from typing import Any, Protocol


class ChatTokenizer(Protocol):
    eos_token_ids: list[int]
    vocab_size: int

    def render_chat(
        self,
        messages: list[dict[str, Any]],
        *,
        add_generation_prompt: bool = True,
        tools: list[dict[str, Any]] | None = None,
        chat_template: str | None = None,
    ) -> str: ...

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]: ...

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str: ...


class HFChatTokenizer:
    """Adapter over a ``transformers`` tokenizer."""

    def __init__(self, tokenizer: Any, extra_eos_ids: list[int] | None = None) -> None:
        self.hf = tokenizer
        eos: list[int] = []
        if tokenizer.eos_token_id is not None:
            eos.append(int(tokenizer.eos_token_id))
        for tid in extra_eos_ids or []:
            if int(tid) not in eos:
                eos.append(int(tid))
        self.eos_token_ids = eos
        self.vocab_size = len(tokenizer)
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]

    def render_chat(
        self, messages, *, add_generation_prompt=True, tools=None, chat_template=None
    ) -> str:
        return self.hf.apply_chat_template(
            messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            chat_template=chat_template,
        )

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Ids of ``text``; the chat template already writes the special tokens a prompt
        needs, so none are added unless asked for (transformers adds them by default)."""
        return self.hf.encode(text, add_special_tokens=add_special_tokens)

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.hf.decode(ids, skip_special_tokens=skip_special_tokens)


class ByteTokenizer:
    """Bytes as tokens (id = byte + 3); ids 0/1/2 are pad, ``<|im_start|>``, ``<|im_end|>``."""

    PAD, IM_START, IM_END = 0, 1, 2
    _OFFSET = 3
    _SPECIAL = {"<|im_start|>": IM_START, "<|im_end|>": IM_END}

    def __init__(self) -> None:
        self.eos_token_ids = [self.IM_END]
        self.vocab_size = 256 + self._OFFSET
        self.pad_token_id = self.PAD

    def render_chat(
        self, messages, *, add_generation_prompt=True, tools=None, chat_template=None
    ) -> str:
        parts = []
        for msg in messages:
            parts.append(f"<|im_start|>{msg['role']}\n{msg.get('content') or ''}<|im_end|>\n")
        if add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Ids of ``text`` (this tokenizer adds no special tokens, asked or not)."""
        # One pass in C: the special tokens become bytes that UTF-8 never produces
        # (0xF8, 0xF9), then a lookup table maps every byte to its id. Specials cannot
        # overlap each other, so this matches a left-to-right scan exactly.
        data = text.encode()
        if b"<|" in data:
            for token, marker in _SPECIAL_MARKERS:
                data = data.replace(token, marker)
        return list(map(_BYTE_TO_ID.__getitem__, data))

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        table = _ID_TO_BYTES_SKIP if skip_special_tokens else _ID_TO_BYTES_KEEP
        try:
            data = b"".join(map(table.__getitem__, ids))
        except (KeyError, TypeError):
            # ids outside the vocabulary, or non-int ids (tensors): the general path,
            # which raises for ids past the byte range just as before.
            return self._decode_slow(ids, skip_special_tokens)
        return data.decode("utf-8", errors="replace")

    def _decode_slow(self, ids: list[int], skip_special_tokens: bool) -> str:
        out = bytearray()
        names = {v: k for k, v in self._SPECIAL.items()}
        for tid in ids:
            if tid >= self._OFFSET:
                out.append(tid - self._OFFSET)
            elif not skip_special_tokens and tid in names:
                out.extend(names[tid].encode())
        return out.decode("utf-8", errors="replace")


# Lookup tables of ByteTokenizer (ids are bytes + 3; 0 is padding, 1/2 the specials).
# Encoding first rewrites each special token to a byte that valid UTF-8 never contains
# (0xF8 and up), which the byte → id table then maps to the special token's id.
_SPECIAL_MARKERS = tuple(
    (token.encode(), bytes([0xF8 + i])) for i, token in enumerate(ByteTokenizer._SPECIAL)
)
_BYTE_TO_ID: tuple[int, ...] = tuple(
    {0xF8 + i: tid for i, tid in enumerate(ByteTokenizer._SPECIAL.values())}.get(
        b, b + ByteTokenizer._OFFSET
    )
    for b in range(256)
)
_ID_TO_BYTES_SKIP: dict[int, bytes] = {
    ByteTokenizer.PAD: b"",
    ByteTokenizer.IM_START: b"",
    ByteTokenizer.IM_END: b"",
    **{b + ByteTokenizer._OFFSET: bytes([b]) for b in range(256)},
}
_ID_TO_BYTES_KEEP: dict[int, bytes] = {
    **_ID_TO_BYTES_SKIP,
    **{tid: tok.encode() for tok, tid in ByteTokenizer._SPECIAL.items()},
}
