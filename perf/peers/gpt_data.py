"""rrfp's training data, ported bit for bit from train/data.cpp: the
generated corpus, the xoshiro256** generator seeded through splitmix64,
and the window sampler, so a Python step sees the bytes rrfp's step sees.
Used by gpt_torch.py (and through it by bench_peers.py and
async_reference.py)."""
from __future__ import annotations

MASK = (1 << 64) - 1


def _splitmix(x: int) -> tuple[int, int]:
    x = (x + 0x9E3779B97F4A7C15) & MASK
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31), x


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK


class Rng:
    """xoshiro256** seeded through splitmix64, as rrfp::train::Rng."""

    def __init__(self, seed: int):
        self.s = []
        x = seed & MASK
        for _ in range(4):
            z, x = _splitmix(x)
            self.s.append(z)

    def next(self) -> int:
        s = self.s
        result = (_rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def below(self, n: int) -> int:
        limit = MASK - (MASK % n)
        while True:
            x = self.next()
            if x < limit:
                return x % n


_DET = ["the", "a", "every", "one"]
_ADJ = ["small", "red", "quiet", "old", "bright", "lazy"]
_NOUN = ["cat", "dog", "bird", "robot", "child", "river", "tree"]
_VERB = ["sees", "likes", "follows", "finds", "draws", "hears"]
_ADV = ["today", "at night", "in the park", "again", "slowly"]


def generate_corpus(seed: int, nbytes: int = 1 << 19) -> bytes:
    """rrfp::train::generate_corpus: same seed, same bytes."""
    r = Rng(seed ^ 0x5EEDC0DE5EEDC0DE)
    parts: list[str] = []
    n = 0

    def pick(words):
        return words[r.below(len(words))]

    while n < nbytes:
        if r.below(3) == 0:
            a, b = r.below(50), r.below(50)
            if r.below(2):
                s = f"{a}+{b}={a + b}\n"
            else:
                s = f"{a % 10}*{b % 10}={(a % 10) * (b % 10)}\n"
        else:
            s = pick(_DET) + " "
            if r.below(2):
                s += pick(_ADJ) + " "
            s += pick(_NOUN) + " " + pick(_VERB) + " the " + pick(_NOUN)
            if r.below(3) == 0:
                s += " " + pick(_ADV)
            s += ".\n"
        parts.append(s)
        n += len(s)
    return "".join(parts).encode()[:nbytes]


class Sampler:
    """rrfp::train::Sampler: windows of seq_len + 1 bytes at random offsets."""

    def __init__(self, text: bytes, seq_len: int, seed: int):
        if len(text) < seq_len + 1:
            raise SystemExit(f"training text has {len(text)} bytes, fewer than one window of {seq_len + 1}")
        self.text, self.seq_len, self.rng = text, seq_len, Rng(seed)

    def next(self, n: int) -> bytes:
        w = self.seq_len + 1
        starts = len(self.text) - w + 1
        out = bytearray()
        for _ in range(n):
            at = self.rng.below(starts)
            out += self.text[at:at + w]
        return bytes(out)


def load_corpus(args) -> bytes:
    if args.corpus:
        with open(args.corpus, "rb") as f:
            return f.read()
    return generate_corpus(args.seed)
