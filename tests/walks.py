"""Random walks over the bytes a grammar allows: the shared driver of the property tests."""


def walk_allowed(matcher, choices) -> bytes:
    """Feed `matcher` one allowed byte per choice (choice modulo the allowed count) until the
    choices run out or nothing is allowed; return the bytes fed. `matcher` is advanced."""
    walked = bytearray()
    for c in choices:
        allowed = matcher.allowed_bytes()
        if not allowed:
            break
        b = allowed[c % len(allowed)]
        assert matcher.accept_bytes(bytes([b]))
        walked.append(b)
    return bytes(walked)


def walk_random(matcher, rng, steps: int) -> bytes:
    """Feed `matcher` up to `steps` allowed bytes drawn by `rng` (a random.Random), nine times
    in ten an ASCII one when there is one, so walks reach structure rather than long UTF-8
    runs; return the bytes fed. `matcher` is advanced (it may stop inside a character)."""
    walked = bytearray()
    for _ in range(steps):
        allowed = matcher.allowed_bytes()
        if not allowed:
            break
        ascii_ = [b for b in allowed if b < 0x80]
        b = rng.choice(ascii_ if ascii_ and rng.random() < 0.9 else allowed)
        assert matcher.accept_bytes(bytes([b]))
        walked.append(b)
    return bytes(walked)


def matcher_state(m):
    """What two forms of one language must agree on at a matcher state: the allowed next
    bytes, acceptance, the completion's length, and that the completion completes the
    document."""
    closing = m.completion()
    done = m.copy()
    return m.allowed_bytes(), m.is_accepting(), len(closing), \
        done.accept_bytes(closing) and done.is_accepting()


def lockstep(new, ref, rng, pick, walks: int, steps: int):
    """Walk matchers of grammars `new` and `ref` on the same random allowed bytes (`pick(allowed,
    rng)` chooses one); the first disagreement (prefix, new's state, ref's state), or None."""
    for _ in range(walks):
        a, b = new.matcher(), ref.matcher()
        prefix = b""
        for _ in range(steps):
            got, want = matcher_state(a), matcher_state(b)
            if got != want or not got[3]:
                return prefix, got, want
            if not got[0]:
                break
            x = pick(got[0], rng)
            assert a.accept_bytes(bytes([x])) and b.accept_bytes(bytes([x]))
            prefix += bytes([x])
    return None
