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
