"""The reference epoch sampler, bit-for-bit the C++ one (data/sampler.h): std::seed_seq +
std::mt19937_64, each epoch's offset and shuffled slice starts, full batches across epochs."""

MASK32, MASK64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def seed_seq_generate(seeds, n):
    """std::seed_seq::generate for n 32-bit words (C++ [rand.util.seedseq])."""
    v = [s & MASK32 for s in seeds]
    s = len(v)
    b = [0x8B8B8B8B] * n
    t = 11 if n >= 623 else 7 if n >= 68 else 5 if n >= 39 else 3 if n >= 7 else (n - 1) // 2
    p = (n - t) // 2
    q = p + t
    m = max(s + 1, n)
    T = lambda x: x ^ (x >> 27)
    for k in range(m):
        r1 = (1664525 * T(b[k % n] ^ b[(k + p) % n] ^ b[(k - 1) % n])) & MASK32
        if k == 0:
            r2 = (r1 + s) & MASK32
        elif k <= s:
            r2 = (r1 + k % n + v[k - 1]) & MASK32
        else:
            r2 = (r1 + k % n) & MASK32
        b[(k + p) % n] = (b[(k + p) % n] + r1) & MASK32
        b[(k + q) % n] = (b[(k + q) % n] + r2) & MASK32
        b[k % n] = r2
    for k in range(m, m + n):
        r3 = (1566083941 * T((b[k % n] + b[(k + p) % n] + b[(k - 1) % n]) & MASK32)) & MASK32
        r4 = (r3 - k % n) & MASK32
        b[(k + p) % n] ^= r3
        b[(k + q) % n] ^= r4
        b[k % n] = r4
    return b


class Mt19937_64:
    """std::mt19937_64 seeded from a std::seed_seq."""
    N, M = 312, 156
    A = 0xB5026F5AA96619E9
    UPPER, LOWER = (MASK64 << 31) & MASK64, (1 << 31) - 1

    def __init__(self, seeds):
        w = seed_seq_generate(seeds, 2 * self.N)
        self.x = [w[2 * i] | (w[2 * i + 1] << 32) for i in range(self.N)]
        self.i = self.N

    def _twist(self):
        x, N, M = self.x, self.N, self.M
        for i in range(N):
            y = (x[i] & self.UPPER) | (x[(i + 1) % N] & self.LOWER)
            x[i] = x[(i + M) % N] ^ (y >> 1) ^ (self.A if y & 1 else 0)
        self.i = 0

    def __call__(self):
        if self.i >= self.N:
            self._twist()
        z = self.x[self.i]
        self.i += 1
        z ^= (z >> 29) & 0x5555555555555555
        z ^= (z << 17) & 0x71D67FFFEDA60000
        z ^= (z << 37) & 0xFFF7EEE000000000
        z ^= z >> 43
        return z & MASK64


def plan_epoch(seed, epoch, train_end, seq_len, train_begin=0):
    """(offset, shuffled slice starts) of one epoch, identical to EpochSampler::plan."""
    rng = Mt19937_64([seed, epoch, 0x7B])
    offset = rng() % seq_len
    first = train_begin + offset
    count = max((train_end - first) // seq_len, 0)
    starts = [first + i * seq_len for i in range(count)]
    for i in range(count - 1, 0, -1):
        j = rng() % (i + 1)
        starts[i], starts[j] = starts[j], starts[i]
    return offset, starts


class Sampler:
    """Full batches of slice starts, moving through epochs like the C++ sampler."""

    def __init__(self, seed, train_end, seq_len, batch_size):
        self.seed, self.train_end, self.seq_len, self.batch = seed, train_end, seq_len, batch_size
        self.epoch, self.index = 0, 0
        self.starts = plan_epoch(seed, 0, train_end, seq_len)[1]

    def next_batch(self):
        while self.index >= len(self.starts) // self.batch:
            self.epoch += 1
            self.index = 0
            self.starts = plan_epoch(self.seed, self.epoch, self.train_end, self.seq_len)[1]
        out = self.starts[self.index * self.batch:(self.index + 1) * self.batch]
        self.index += 1
        return out
