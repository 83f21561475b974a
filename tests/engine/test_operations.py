"""The Engine's verbs for running Keepmind from the browser: who can read what, receipts and their
feedback, models (catalog, upload, switch), settings, export and import."""

import io
import json
import zipfile

import pytest

from keepmind.engine import InvalidInput, NotFound, Relation, ScopeError, open_engine
from keepmind.engine.errors import SettingsError
from keepmind.engine.models import manifest as manifests
from keepmind.engine.models.manifest import ModelError
from keepmind.engine.settings import defaults
from support.files import zipped
from support.provider import ScriptedProvider

FILES = ("model.onnx", "vocab.txt", "tokenizer.json")


# -- who can read what ----------------------------------------------------------------------------


def test_view_as_reads_through_the_session_rule(engine):
    work, home = engine.open_session("personal", "work"), engine.open_session("personal", "home")
    team = engine.open_session("team", "work")
    engine.store(work, "Personal work", "Personal fact at work.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Lisbon", "place")])
    engine.store(home, "Personal home", "Personal fact at home.")
    engine.store(team, "Team work", "The team ships on Fridays.", anchor="Release", anchor_type="workflow",
                 relations=[Relation("owned_by", "Platform", "org")])
    as_team = engine.view_as("team", "work")
    assert [m.title for m in engine.browse(as_team).items] == ["Team work"]
    assert {a.name for a in engine.anchors(as_team)} == {"Release", "Platform"}
    assert [(e.from_name, e.to_name) for e in engine.visible_edges(as_team)] == [("Release", "Platform")]
    as_personal = engine.view_as("personal", "work")
    assert {m.title for m in engine.browse(as_personal).items} == {"Personal work", "Team work"}
    assert engine.counts(as_personal, since=0)["edges"] == 2


def test_view_as_never_goes_beyond_the_token_looking(engine):
    viewer = engine.create_token("team-work", "team", ["work"]).token
    with pytest.raises(ScopeError):
        engine.view_as("personal", "work", token=viewer)
    with pytest.raises(ScopeError):
        engine.view_as("team", "home", token=viewer)
    assert engine.view_as("team", "work", token=viewer).readable_audiences == ("team",)


def test_view_as_includes_the_cross_boundary_grants_of_settings(make_engine):
    eng = make_engine(policy__cross_boundary_reads={"work": ["shared"]})
    eng.store(eng.open_session("personal", "shared"), "Shared", "A shared fact.")
    assert [m.title for m in eng.browse(eng.view_as("personal", "work")).items] == ["Shared"]


# -- receipts and feedback ---------------------------------------------------------------------------


def test_a_receipt_reads_as_stages_and_labels_are_counted(engine):
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Seat preference", "The user prefers window seats on flights.").id
    other = engine.store(sid, "Coffee", "The user drinks coffee every morning.").id
    result = engine.recall(sid, "book a flight with a window seat")
    view = engine.receipt_view(result.receipt_id)
    stages = {s["id"]: s for s in view["stages"]}
    assert stages and all(s["stage"] in ("injected", "floor", "gate", "budget", "rank") for s in stages.values())
    assert view["timings"][-1][0] == "total"
    injected = [i.id for i in result.items]
    if injected:
        engine.label_recall(result.receipt_id, injected[0], "not_here")
        engine.label_recall(result.receipt_id, injected[0], "not_here")  # once is enough
    engine.label_recall(result.receipt_id, other, "should_recall")
    counts = engine.feedback_counts()
    assert counts == {"not_here": 1 if injected else 0, "should_recall": 1}
    assert {(lb["item_id"], lb["label"]) for lb in engine.receipt_view(result.receipt_id)["labels"]} >= {
        (other, "should_recall")}
    with pytest.raises(InvalidInput):
        engine.label_recall(result.receipt_id, other, "not_here")  # it was not injected
    assert doc


def test_feedback_labels_become_calibration_records(engine):
    from keepmind.engine.recall import feedback

    sid = engine.open_session("personal", "work")
    engine.store(sid, "Seat preference", "The user prefers window seats on flights.")
    coffee = engine.store(sid, "Coffee", "The user drinks coffee every morning.").id
    receipt = engine.recall(sid, "window seat coffee").receipt_id
    engine.label_recall(receipt, coffee, "should_recall")
    lone = engine.recall(sid, "what about my coffee").receipt_id
    engine.label_recall(lone, coffee, "should_recall", remove=True)  # nothing to take back: harmless
    records = feedback.records(engine)
    assert [(r.kind, r.relevant, r.store) for r in records] == [("positive", frozenset({coffee}), "feedback")]
    assert records[0].plan is not None and records[0].ranked


def test_a_token_cannot_label_a_recall_it_may_not_see(engine):
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Coffee", "The user drinks coffee every morning.").id
    receipt = engine.recall(sid, "coffee").receipt_id
    team = engine.create_token("team-work", "team", ["work"]).token
    with pytest.raises(NotFound):
        engine.label_recall(receipt, doc, "should_recall", token=team)
    assert engine.feedback_counts(token=team) == {"not_here": 0, "should_recall": 0}


# -- settings --------------------------------------------------------------------------------------


def test_a_live_setting_applies_at_once_and_a_start_setting_waits(engine):
    now, later = engine.change_settings({"memory.curation.review": True, "server.port": 9123})
    assert now == ["memory.curation.review"] and later == ["server.port"]
    assert engine.settings["memory.curation.review"] is True and engine.settings["server.port"] != 9123
    saved = json.loads(engine.settings_path.read_text())
    assert saved == {"memory": {"curation": {"review": True}}, "server": {"port": 9123}} or saved == {
        "memory.curation.review": True, "server.port": 9123}
    views = {v.name: v for _, group in engine.setting_views() for v in group}
    assert views["server.port"].pending_restart and not views["memory.curation.review"].pending_restart


def test_a_form_value_is_read_as_its_key_takes_it(engine):
    assert engine.changed_settings({"memory.recall.max_items": "4", "memory.llm.model": "123",
                                    "memory.recall.min_cosine": "", "policy.cross_boundary_reads": '{"w": ["x"]}'}) \
        == {"memory.recall.max_items": 4, "memory.llm.model": "123", "policy.cross_boundary_reads": {"w": ["x"]}}
    with pytest.raises(SettingsError) as info:
        engine.change_settings(engine.changed_settings({"memory.recall.ranking": "best"}))
    assert "memory.recall.ranking" in info.value.message and "hybrid, fused, cosine, bm25" in info.value.message


def test_the_llm_key_is_never_shown_only_its_variable(make_engine):
    eng = make_engine(memory__llm__api_key_env="MY_LLM_KEY")
    assert eng.llm_key() == {"env": "MY_LLM_KEY", "present": False}


def test_test_connection_asks_the_saved_llm(engine):
    provider = ScriptedProvider().start()
    try:
        assert engine.test_llm()["ok"] is False  # none configured
        engine.change_settings({"memory.llm.base_url": provider.base_url, "memory.llm.model": "scripted-1"})
        provider.default = "ok"
        result = engine.test_llm()
        assert result["ok"] and "scripted-1" in result["message"]
        provider.default = ("status", 503, "overloaded")
        result = engine.test_llm()
        assert not result["ok"] and "503" in result["message"]
    finally:
        provider.stop()


# -- models ----------------------------------------------------------------------------------------


@pytest.fixture
def tiny_pack(tmp_path, tiny):
    """A home whose models dir knows tiny-embed (its manifest) without its files, and the files."""
    home = tmp_path / "home"
    man = tiny.install_tiny(tmp_path / "src", "tiny-embed")
    manifests.save_custom(home / "models", man)
    tiny.install_tiny(home / "models", "tiny-other", seed=11, dims=8)
    return home, {n: (tmp_path / "src" / "tiny-embed" / n).read_bytes() for n in FILES}


def _open(home, clock, **overrides):
    settings = defaults().with_overrides(memory__embeddings__auto_download=False, **overrides)
    return open_engine(home, settings=settings, clock=clock, start_workers=False)


def test_an_uploaded_zip_is_verified_installed_and_listed(tiny_pack, clock):
    home, files = tiny_pack
    with _open(home, clock) as eng:
        states = {m["id"]: m["state"] for m in eng.model_catalog()}
        assert states["tiny-embed"] == "missing" and states["tiny-other"] == "verified"
        job = eng.upload_models([("tiny.zip", zipped({f"tiny/{n}": d for n, d in files.items()}))])
        done = eng.jobs.wait(job.id, 30)
        assert done.state == "done", done.error
        assert {m["id"]: m["state"] for m in eng.model_catalog()}["tiny-embed"] == "verified"
        assert not (home / "uploads").exists() or not any((home / "uploads").iterdir())


def test_a_tampered_upload_names_the_file_and_installs_nothing(tiny_pack, clock):
    home, files = tiny_pack
    with _open(home, clock) as eng:
        bad = dict(files, **{"model.onnx": files["model.onnx"][:-1] + b"\x00"})
        job = eng.upload_models([("tiny.zip", zipped({f"tiny/{n}": d for n, d in bad.items()}))])
        done = eng.jobs.wait(job.id, 30)
        assert done.state == "failed" and "tiny/model.onnx in tiny.zip" in done.error and "sha256" in done.error
        assert sorted(p.name for p in (home / "models" / "tiny-embed").iterdir()) == ["manifest.json"]
        assert not any((home / "uploads").iterdir())


@pytest.mark.parametrize("member, why", [("../x", "escapes"), ("/etc/x", "escapes"), ("a/../../x", "escapes")])
def test_an_upload_whose_path_escapes_is_refused_before_anything_reads_it(tiny_pack, clock, member, why):
    home, files = tiny_pack
    with _open(home, clock) as eng:
        with pytest.raises(ModelError) as info:
            eng.upload_models([("evil.zip", zipped({member: b"x", **{f"t/{n}": d for n, d in files.items()}}))])
        assert "evil.zip" in info.value.message and why in info.value.message
        assert eng.jobs.list() == [] and not any((home / "uploads").iterdir())


def test_an_upload_that_is_not_a_zip_or_not_a_model_file_is_refused(tiny_pack, clock):
    home, _ = tiny_pack
    with _open(home, clock) as eng:
        with pytest.raises(ModelError, match="pack.zip is not a zip archive"):
            eng.upload_models([("pack.zip", io.BytesIO(b"not a zip at all"))])
        with pytest.raises(ModelError, match="notes.pdf is not a model file"):
            eng.upload_models([("notes.pdf", io.BytesIO(b"%PDF"))])


def test_an_oversized_upload_is_refused(tiny_pack, clock):
    home, _ = tiny_pack
    with _open(home, clock, server__max_upload_bytes=1_048_576) as eng:
        with pytest.raises(ModelError, match="model.onnx is larger than 1,048,576 bytes"):
            eng.upload_models([("model.onnx", io.BytesIO(b"0" * 1_048_577))])


def test_switching_the_embedder_writes_the_setting_and_reembeds_with_progress(tiny_pack, clock):
    home, _ = tiny_pack
    with _open(home, clock, memory__embeddings__model_id="tiny-other") as eng:
        eng.models.load()
        sid = eng.open_session("personal", "work")
        for i in range(3):
            eng.store(sid, f"n{i}", f"dark mode {i}")
        with pytest.raises(InvalidInput):
            eng.switch_embedder("tiny-embed")  # not installed yet
        eng.change_settings({"memory.embeddings.model_id": "tiny-other"})
        assert {m["id"]: m["state"] for m in eng.model_catalog()}["tiny-other"] == "active"
    with _open(home, clock, memory__embeddings__model_id="tiny-other") as eng:
        eng.models.load()
        src = home.parent / "src" / "tiny-embed"
        eng.jobs.wait(eng.upload_models([(n, io.BytesIO((src / n).read_bytes())) for n in FILES]).id, 30)
        job = eng.jobs.wait(eng.switch_embedder("tiny-embed").id, 30)
        assert job.state == "done", job.error
        assert job.done == job.total == 3 and "tiny-embed is active" in job.message
        assert eng.models.embedder().model_id == "tiny-embed"
        assert json.loads((home / "keepmind.json").read_text())["memory.embeddings.model_id"] == "tiny-embed"


# -- export and import -------------------------------------------------------------------------------


def test_export_then_preview_then_import_gives_the_same_memories(engine, make_engine, tmp_path):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Anna", "Anna lives in Lisbon.", anchor="Anna", relations=[Relation("lives_in", "Lisbon")])
    engine.store(sid, "Seat", "Window seats, never the last row.")
    path, name = engine.export_file(tmp_path, "jsonl")
    assert name.endswith(".jsonl")
    empty = make_engine(tmp_path / "empty")
    staging = empty.stage_import(name, io.BytesIO(path.read_bytes()))
    preview = empty.import_staged(staging, dry_run=True)
    assert preview["errors"] == [] and preview["preview"]["documents"] == 2
    assert {i["title"] for i in preview["preview"]["items"]} == {"Anna", "Seat"}
    viewer = empty.viewer(empty.ensure_token(None).token)
    assert empty.browse(viewer).items == []  # a preview keeps nothing
    done = empty.import_staged(staging, dry_run=False)
    assert done["imported"] >= 2 and not done["errors"]
    assert sorted(m.body for m in empty.browse(viewer).items) == sorted(m.body for m in engine.browse(viewer).items)


def test_a_markdown_export_is_a_zip_and_a_memory_folder_zip_imports(engine, tmp_path):
    engine.store(engine.open_session("personal", "work"), "Anna", "Anna lives in Lisbon.", anchor="Anna")
    path, name = engine.export_file(tmp_path, "markdown")
    assert name.endswith(".zip") and any(n.endswith(".md") for n in zipfile.ZipFile(path).namelist())
    upload = zipped({"ws/MEMORY.md": "# Preferences\n\n- I like green tea.\n",
                     "ws/memory/2026-03-02.md": "- Met Bruno about the release.\n"})
    staging = engine.stage_import("workspace.zip", upload)
    preview = engine.import_staged(staging, audience="personal", boundary="notes")
    assert preview["errors"] == [] and preview["preview"]["documents"] + preview["preview"]["records"] == 2


@pytest.mark.parametrize("member", ["../evil.md", "/abs/MEMORY.md"])
def test_an_import_zip_whose_path_escapes_is_refused(engine, member):
    with pytest.raises(InvalidInput, match="escapes"):
        engine.stage_import("bad.zip", zipped({member: "- x\n", "MEMORY.md": "- y\n"}))
    assert not any((engine.home / "imports").iterdir())


def test_an_unknown_upload_and_a_gone_staging_id_are_clear_errors(engine):
    with pytest.raises(InvalidInput, match="not something Keepmind imports"):
        engine.stage_import("photo.png", io.BytesIO(b"png"))
    with pytest.raises(NotFound):
        engine.import_staged("0" * 32)


def test_a_model_file_changed_on_disk_shows_as_corrupt_naming_the_file(tiny_pack, clock):
    home, _ = tiny_pack
    with _open(home, clock) as eng:
        assert {m["id"]: m["state"] for m in eng.model_catalog()}["tiny-other"] == "verified"
        onnx = home / "models" / "tiny-other" / "model.onnx"
        data = onnx.read_bytes()
        onnx.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # same size, other bytes, a new mtime
        found = {m["id"]: m for m in eng.model_catalog()}["tiny-other"]
        assert found["state"] == "corrupt" and "model.onnx has sha256" in found["problems"][0]
        assert not eng.models.loading  # nothing was started in the background
