"""`keepmind models import` treats what it is given as untrusted: a member is read only when its
declared size is the manifest's (or under a custom model's ceiling), reads are counted against it,
a damaged zip is a clear error, and a folder import never follows a symbolic link."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from keepmind.desktop.cli import main
from keepmind.engine.models.importer import MAX_CUSTOM_ONNX

CENTRAL, LOCAL = b"PK\x01\x02", b"PK\x03\x04"


def declare_size(pack: Path, member: str, size: int) -> None:
    """Rewrite the uncompressed size a zip's headers declare for `member` (its data stays)."""
    data = bytearray(pack.read_bytes())
    name = member.encode()
    for signature, offset, name_at in ((CENTRAL, 24, 46), (LOCAL, 22, 30)):
        at = data.find(signature)
        while at != -1:
            length = struct.unpack_from("<H", data, at + (28 if signature == CENTRAL else 26))[0]
            if bytes(data[at + name_at:at + name_at + length]) == name:
                struct.pack_into("<I", data, at + offset, size)
            at = data.find(signature, at + 4)
    pack.write_bytes(bytes(data))


def run(capsys, *argv) -> tuple[int, str]:
    code = main(["models", "import", *map(str, argv)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.err


@pytest.fixture
def model_files(tmp_path, tiny):
    src = tmp_path / "src"
    tiny.write_tokenizer(src)
    tiny.write_embedder(src / "model.onnx", seed=5)
    return src


def zipped(path: Path, src: Path, compression=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name in ("model.onnx", "vocab.txt", "tokenizer.json"):
            zf.write(src / name, name)
    return path


def installed(home: Path) -> list[str]:
    models = home / "models"
    return sorted(p.relative_to(models).as_posix() for p in models.rglob("*")) if models.exists() else []


def test_a_member_declaring_more_than_a_custom_model_may_have_is_refused_before_a_byte_is_read(
        tmp_path, model_files, capsys):
    pack = zipped(tmp_path / "bomb.zip", model_files)
    declare_size(pack, "model.onnx", 2 << 30)
    home = tmp_path / "home"
    code, err = run(capsys, pack, "--as", "mine", "--home", home)
    assert code == 2
    assert f"model.onnx in bomb.zip declares 2,147,483,648 bytes, more than the {MAX_CUSTOM_ONNX:,}" in err
    assert "nothing was read or installed" in err
    assert installed(home) == []


def test_a_member_whose_data_does_not_match_its_header_is_a_clear_error(tmp_path, model_files, capsys):
    pack = zipped(tmp_path / "liar.zip", model_files)
    size = (model_files / "vocab.txt").stat().st_size
    declare_size(pack, "vocab.txt", size - 100)  # the data is longer than it says
    home = tmp_path / "home"
    code, err = run(capsys, pack, "--as", "mine", "--home", home)
    assert code == 2
    assert "vocab.txt in liar.zip cannot be read" in err and "damaged or was tampered with" in err
    assert installed(home) == []


def test_a_file_that_is_not_a_zip_is_a_clear_error(tmp_path, capsys):
    pack = tmp_path / "pack.zip"
    pack.write_bytes(b"PK\x03\x04 this is not really a zip archive" * 10)
    code, err = run(capsys, pack, "--home", tmp_path / "home")
    assert code == 2 and "pack.zip cannot be read" in err and "get a fresh copy" in err


def test_a_known_model_member_of_another_size_is_never_read(tmp_path, tiny, capsys):
    home = tmp_path / "home"
    man = tiny.install_tiny(home / "models", "tiny-embed")
    folder = home / "models" / "tiny-embed"
    pack = zipped(tmp_path / "pack.zip", folder)
    (folder / "model.onnx").unlink()
    declare_size(pack, "model.onnx", 2 << 30)
    code, err = run(capsys, pack, "--home", home)
    assert code == 2 and "matches no known manifest" in err
    assert "model.onnx in pack.zip (2,147,483,648 bytes)" in err  # described, not hashed
    assert not (folder / "model.onnx").exists() and man.id == "tiny-embed"


def test_a_folder_import_never_follows_a_symbolic_link(tmp_path, model_files, capsys):
    outside = tmp_path / "outside.onnx"
    outside.write_bytes((model_files / "model.onnx").read_bytes())
    (model_files / "model.onnx").unlink()
    (model_files / "model.onnx").symlink_to(outside)
    home = tmp_path / "home"
    code, err = run(capsys, model_files, "--as", "mine", "--home", home)
    assert code == 2
    assert "src/model.onnx is a symbolic link: a folder import never follows links" in err and "cp -L" in err
    assert installed(home) == []
    (model_files / "model.onnx").unlink()
    (model_files / "model.onnx").write_bytes(outside.read_bytes())
    assert run(capsys, model_files, "--as", "mine", "--home", home)[0] == 0
