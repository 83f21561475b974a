"""Errors a person can act on. Every message says what went wrong and what to do."""


class EngineError(Exception):
    """Base class: the message is written for the person who sent the input."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidInput(EngineError):
    """Malformed or missing input: empty content, an unknown class, a bad id."""


class SecretBlocked(InvalidInput):
    """Memory text holds a credential (the message names its kind, never the value)."""

    def __init__(self, message: str, kinds: tuple[str, ...] = ()):
        super().__init__(message)
        self.kinds = tuple(kinds)


class NotFound(EngineError):
    """The id is well formed but names nothing this scope can see."""

    status = 404


class ScopeError(EngineError):
    """An attempt to read or write outside the session's audience and boundary."""

    status = 403


class MemoryDisabled(EngineError):
    """Memory is switched off by the deployment gate (`memory.enabled = false`)."""

    status = 409


class SettingsError(EngineError):
    """keepmind.json holds a key or value that cannot be used; `problems` says, per key, what is
    wrong with each bad value (every one of them, not only the first)."""

    def __init__(self, message: str, problems: dict[str, str] | None = None):
        super().__init__(message)
        self.problems = dict(problems or {})


class EngineClosed(EngineError):
    """The engine was closed; nothing more can be written."""

    status = 503


class StorageFailed(EngineError):
    """The database could not be written: the disk is full, the file may not grow, or an I/O error."""

    status = 507
