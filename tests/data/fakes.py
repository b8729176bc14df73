"""What the fetcher tests fake: archives written from bytes, and a network that is down."""
import io
import subprocess
import tarfile
from pathlib import Path


def tar_with(path: Path, files: dict[str, bytes]) -> None:
    """A .tar.gz at ``path`` holding ``files`` (member name: its bytes)."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def failing_commands(monkeypatch) -> list:
    """Make every ``subprocess.run`` fail as pip or npm does without a network; returns the commands given."""
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, "", "no network")

    monkeypatch.setattr(subprocess, "run", fake_run)
    return calls
