"""Build the container image of the `docker` backend from Debian packages (no pull needed).

The recipe (`sandboxes/image/recipe.yaml`) lists packages; they are fetched with
`apt-get download`, unpacked with `dpkg -x` into an empty root filesystem next to the worker,
and the tree is imported into the engine. The tag is a hash of the recipe and the worker,
so an image is built once per content and a changed worker gets a new image.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from pydantic import Field

from polar.config import StrictModel, load_yaml
from polar.sandboxes.base import SandboxUnavailable
from polar.workspace import find_asset

WORKER = Path(__file__).resolve().parent / "worker.py"
IMAGE_WORKER = "/opt/polar/worker.py"


class ImageRecipe(StrictModel):
    repository: str = "polar-sandbox"
    python: str = "/usr/bin/python3.11"
    init: str = "/usr/bin/catatonit"  # PID 1 of every container; the worker runs under it
    packages: list[str] = Field(min_length=1)
    remove: list[str] = Field(default_factory=list)


def load_recipe(path: str | Path | None = None) -> tuple[ImageRecipe, bytes]:
    p = Path(path) if path else find_asset("sandboxes", "image/recipe.yaml")
    if p is None:
        raise SandboxUnavailable("no sandbox image recipe found (sandboxes/image/recipe.yaml)")
    return load_yaml(p, ImageRecipe), p.read_bytes()


def image_tag(recipe_bytes: bytes) -> str:
    digest = hashlib.sha256(recipe_bytes + b"\0" + WORKER.read_bytes()).hexdigest()
    return digest[:16]


def image_ref(path: str | Path | None = None) -> tuple[str, ImageRecipe]:
    recipe, raw = load_recipe(path)
    return f"{recipe.repository}:{image_tag(raw)}", recipe


def _run(argv: list[str], cwd: Path) -> None:
    try:
        out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise SandboxUnavailable(f"building the sandbox image needs `{argv[0]}` (Debian's apt/dpkg)") from None
    if out.returncode != 0:
        raise SandboxUnavailable(f"`{' '.join(argv[:3])} ...` failed while building the sandbox "
                                 f"image: {out.stderr.strip()[-600:]}")


def build_rootfs(recipe: ImageRecipe, workdir: Path) -> Path:
    """Download and unpack the packages; returns a tar of the root filesystem."""
    debs = workdir / "debs"
    root = workdir / "root"
    debs.mkdir()
    root.mkdir()
    debs.chmod(0o777)  # apt's download user (_apt) must be able to write here
    _run(["apt-get", "download", "-q", *recipe.packages], debs)
    for deb in sorted(debs.glob("*.deb")):
        _run(["dpkg", "-x", str(deb), str(root)], workdir)
    for rel in recipe.remove:
        shutil.rmtree(root / rel, ignore_errors=True)
    (root / "opt/polar").mkdir(parents=True)
    shutil.copy(WORKER, root / "opt/polar/worker.py")
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/nonexistent\n"
                                     "nobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n")
    (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    for d in ("tmp", "proc", "dev", "sys"):
        (root / d).mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)
    if shutil.which("ldconfig") or Path("/sbin/ldconfig").exists():
        # A loader cache so libraries under /usr/lib/<triplet> are found without env vars.
        _run([shutil.which("ldconfig") or "/sbin/ldconfig", "-r", str(root)], workdir)
    tar_path = workdir / "rootfs.tar"
    with tarfile.open(tar_path, "w") as tar:
        for child in sorted(root.iterdir()):
            tar.add(child, arcname=child.name, filter=_root_owned)
    return tar_path


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def image_exists(client: Any, ref: str) -> bool:
    import docker.errors

    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(client: Any, recipe_path: str | Path | None = None, force: bool = False,
                log: Any = None) -> str:
    """Build the sandbox image unless an image of the same content exists; returns its ref."""
    ref, recipe = image_ref(recipe_path)
    if not force and image_exists(client, ref):
        return ref
    with tempfile.TemporaryDirectory(prefix="polar-image-") as tmp:
        if log:
            log(f"downloading {len(recipe.packages)} Debian packages and unpacking them")
        tar_path = build_rootfs(recipe, Path(tmp))
        if log:
            log(f"importing the root filesystem as {ref}")
        repo, tag = ref.split(":")
        with open(tar_path, "rb") as f:
            data = f.read()
        try:
            reply = client.api.import_image_from_data(data, repository=repo, tag=tag)
        except Exception as err:
            raise SandboxUnavailable(f"the engine refused to import the image: {err}") from None
        # Podman's compatible API ignores the tag on import: tag the new id explicitly.
        match = re.search(r"sha256:[0-9a-f]{64}", str(reply))
        if match and not image_exists(client, ref):
            client.images.get(match.group(0)).tag(repo, tag)
            with contextlib.suppress(Exception):
                client.images.remove(f"{repo}:latest", noprune=True)
    if not image_exists(client, ref):
        raise SandboxUnavailable(f"the image {ref} was imported but the engine does not list it")
    _remove_older(client, recipe.repository, ref)
    return ref


def _remove_older(client: Any, repository: str, keep: str) -> None:
    """Drop images of earlier worker/recipe versions (best effort: one may be in use)."""
    for image in client.images.list():
        for tag in image.tags:
            if tag.rsplit(":", 1)[0].endswith(repository) and not tag.endswith(keep):
                with contextlib.suppress(Exception):
                    client.images.remove(tag)
