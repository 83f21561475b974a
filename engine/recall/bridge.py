"""Word bridges: a task and the preference it needs often share a meaning word to word, but no word.

"Book me a flight to Berlin next week." and "I always prefer a window seat when I fly." have no
word in common and a sentence cosine of 0.28, the noise band of task messages whose topic the
store lacks (their best standing statement sits at a median 0.29); but "flight" and "fly",
embedded alone, are at 0.77. Inside a sentence such a pair is diluted by every other word.

So for a task message, each standing statement near the top of the ranking gets a `bridge`: the
highest cosine between one topical word of the message part it matched and one topical word of
its own with a different stem (a shared stem is already coverage). Topical means outside the
request's framing ("can you", "recommend", "book me") and the statement's stance ("always
prefer", "dislike"), which stance.py finds: bridging "suggest" to "prefer" would lift every
preference for every task. Among a simulated PrefEval user's 20 preferences, the sentence cosine
plus 0.3 x the bridge kept the question's own preference above the level that refuses 0.90 of
absent-topic questions for 0.48 of the questions, against 0.37 for the cosine alone.

Single words are embedded by the same embedder and kept in a bounded cache per model: the words of
a standing statement when it is written (with its passage vector, synchronously, so a memory is
bridgeable as soon as it is stored), a message's few words at recall time, inside the budget.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

import numpy as np

from ..stance import framing_spans
from .plan import content_words
from .stem import stem

MAX_WORDS = 12          # topical words kept per text
CACHE_WORDS = 40_000    # words kept per cache (float16: about 30 MB at 384 dimensions)
BATCH = 256
_NUMBER = re.compile(r"^[\d.,:/-]+$")


def topical_words(text: str) -> list[str]:
    """The distinct content words of a text outside its request framing and stance words."""
    text = (text or "").replace("’", "'")
    cut = framing_spans(text)
    kept = "".join(" " if any(a <= i < b for a, b in cut) else ch for i, ch in enumerate(text)) if cut else text
    out: list[str] = []
    for w in content_words(kept):
        if len(w) >= 3 and not _NUMBER.match(w) and w not in out:
            out.append(w)
    return out[:MAX_WORDS]


class WordVectors:
    """word -> unit vector under one model id, least recently used dropped first; thread-safe."""

    def __init__(self, limit: int = CACHE_WORDS):
        self.limit = limit
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def found(self, model_id: str, words) -> dict[str, np.ndarray]:
        out = {}
        with self._lock:
            for w in words:
                vec = self._vectors.get((model_id, w))
                if vec is not None:
                    self._vectors.move_to_end((model_id, w))
                    out[w] = vec
        return out

    def missing(self, model_id: str, words) -> list[str]:
        with self._lock:
            return [w for w in dict.fromkeys(words) if (model_id, w) not in self._vectors]

    def add(self, model_id: str, words: list[str], vectors: np.ndarray) -> None:
        with self._lock:
            for w, v in zip(words, vectors):
                self._vectors[(model_id, w)] = np.asarray(v, dtype=np.float16)
                self._vectors.move_to_end((model_id, w))
            while len(self._vectors) > self.limit:
                self._vectors.popitem(last=False)

    def learn(self, embedder, words) -> int:
        """Embed the words not cached yet (in batches); returns how many were embedded."""
        todo = self.missing(embedder.model_id, words)
        for start in range(0, len(todo), BATCH):
            chunk = todo[start:start + BATCH]
            self.add(embedder.model_id, chunk, embedder.embed_passages(chunk))
        return len(todo)


def bridge(message_words: list[str], memory_words: list[str], vectors: dict[str, np.ndarray]) -> float:
    """The highest cosine between a message word and a memory word of another stem (0 without pairs)."""
    left = [w for w in message_words if w in vectors]
    right = [w for w in memory_words if w in vectors]
    if not left or not right:
        return 0.0
    sims = np.asarray([vectors[w] for w in left], dtype=np.float32) @ np.asarray(
        [vectors[w] for w in right], dtype=np.float32).T
    same = np.array([[stem(a) == stem(b) for b in right] for a in left])
    sims[same] = -1.0
    return max(0.0, float(sims.max()))
