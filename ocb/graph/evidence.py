"""What a transcript says about an answer: the lines it cites (``path#L12-L20``), the
text it quotes, and whether the user's next message corrects it.

* **Cites**: a ``path#Lstart-Lend`` (or ``path#Ln``) in the answer, as the memory tools
  and the plugin's context frame them.
* **Quotes**: the answer and a text share a run of at least ``QUOTE_WORDS`` (8)
  consecutive words (lower-cased, punctuation ignored). Shorter runs are common phrases;
  eight words in a row are rarely shared by chance.
* **Corrects**: the next user message says, in its first sentence, that the answer was
  wrong or did not work ("no, that's wrong", "that didn't work", "it's still failing",
  "that's not what I asked"). A bare "no" is not enough: it answers questions too.
"""

from __future__ import annotations

import re

import msgspec

QUOTE_WORDS = 8
"""The shortest run of words an answer and a text share for the answer to quote it."""
CORRECTION_WORDS = 4
"""The fewest words a correcting message holds besides its cue to be a correction
candidate (``that's wrong`` alone says nothing to remember)."""

_CITATION = re.compile(r"(?P<path>[\w][\w./-]*?)#L(?P<start>\d+)(?:-L?(?P<end>\d+))?\b")
_WORD = re.compile(r"\w+")
_NOT = r"(?:not|n't|n’t)"
_CUES = re.compile(
    rf"""
    \b(?:that|this|it|which|you|your\s+answer|the\s+answer)
      (?:'s|’s|'re|’re|\s+is|\s+was|\s+are|\s+were)\s+
      (?:(?:just\s+|completely\s+|totally\s+)?(?:wrong|incorrect|inaccurate|outdated|mistaken)
        |not\s+(?:right|correct|true|accurate|it|what\s+i\s+(?:asked|meant|wanted)))\b
    | \b(?:that|this|it)\s+(?:did|does|do|will|would|wo)\s*{_NOT}\s+(?:work|help)
    | \b(?:still|it's\s+still|it\s+is\s+still)\s+(?:broken|failing|not\s+working)\b
    | \bnot\s+what\s+i\s+(?:asked|meant|wanted)\b
    | ^\W*(?:wrong|incorrect)\b
    """,
    re.IGNORECASE | re.VERBOSE,
)
_FIRST = re.compile(r"^.*?(?:[.!?](?:\s|$)|\n|$)", re.S)


class Lines(msgspec.Struct, frozen=True):
    """Lines ``start``..``end`` (1-based, inclusive) of the workspace file ``path``."""

    path: str
    start: int
    end: int


def citations(text: str) -> list[Lines]:
    """The ``path#Lstart-Lend`` ranges ``text`` cites, in order, each once."""
    out: dict[Lines, None] = {}
    for m in _CITATION.finditer(text):
        start = int(m["start"])
        end = int(m["end"]) if m["end"] else start
        out[Lines(m["path"].removeprefix("./"), start, max(start, end))] = None
    return list(out)


def _runs(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def quotes(answer: str, text: str, words: int = QUOTE_WORDS) -> bool:
    """Whether ``answer`` and ``text`` share a run of at least ``words`` words."""
    if not answer or not text:
        return False
    mine = _runs(answer, words)
    return bool(mine) and not mine.isdisjoint(_runs(text, words))


def correction_cue(reply: str) -> str:
    """The words of ``reply``'s first sentence that say the answer was wrong, or ""."""
    first = _FIRST.match(reply.strip())
    head = first.group(0) if first else ""
    m = _CUES.search(head[:240])
    return m.group(0).strip() if m else ""


def correction_candidate(reply: str) -> str:
    """``reply`` as a CORRECTION's content when it corrects the answer and says more
    than its cue (at least ``CORRECTION_WORDS`` other words), else ""."""
    cue = correction_cue(reply)
    if not cue:
        return ""
    rest = len(_WORD.findall(reply)) - len(_WORD.findall(cue))
    return reply.strip() if rest >= CORRECTION_WORDS else ""
