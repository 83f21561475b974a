"""The write path: sessions are observed, proposals queue as checkpoints, curation decides.

`attach(engine)` (called by open_engine) builds the LLM client from settings (the API key comes
from the composition root), the curation worker and the observer scheduler, and registers them
as one engine worker: started only when the engine starts workers, stopped (leases released)
by Engine.close.
"""

from __future__ import annotations

from . import doctor
from .llm import ChatClient, config_from_settings
from .observer import Observer
from .worker import CurationWorker, ObserverScheduler


class WritePath:
    """The write path's resources: the provider client and the two background workers."""

    def __init__(self, engine, llm_api_key: str | None = None, llm_transport=None):
        self.api_key = llm_api_key or None  # kept for a connection test of changed settings; never shown
        config = config_from_settings(engine.settings, llm_api_key)
        self.llm = ChatClient(config, clock=engine.clock, transport=llm_transport) if config else None
        self.curation = CurationWorker(engine, self.llm)
        self.observer = Observer(engine, self.llm, on_queued=self.curation.wake)
        self.scheduler = ObserverScheduler(engine, self.observer)

    def start(self) -> None:
        self.curation.start()
        self.scheduler.start()

    def wake_observer(self) -> None:
        self.scheduler.wake()

    def status_reasons(self) -> list[str]:
        return self.llm.status_reasons() if self.llm is not None else []

    def stop(self) -> None:
        self.scheduler.stop()
        self.curation.stop()
        if self.llm is not None:
            self.llm.close()


def attach(engine, *, llm_api_key: str | None = None, start: bool = False) -> WritePath:
    writepath = WritePath(engine, llm_api_key)
    engine.writepath = writepath
    engine.add_worker(writepath, start=start)
    engine.add_status_hook(writepath.status_reasons)
    engine.doctor_checks.extend((doctor.check_backlog, doctor.check_llm))
    return writepath


__all__ = ["WritePath", "attach"]
