"""The skill library on disk: `library.sqlite` (the index) + `<name>/<version>/` folders
(+ `hooks/*.py`: the library's own feature and termination hooks, see `resolve_hook`).

Invariant: an index row exists only for a complete, verified version folder. Registration
writes into `.staging/` (same filesystem), verifies the weights by reading them back, then,
inside one `BEGIN IMMEDIATE` transaction, allocates the version, renames the folder into
place and inserts the row. A process killed at any point leaves either nothing visible or a
folder without a row (an orphan, invisible and removed by `cleanup()` or the next
registration of that version). Several processes may register at once: SQLite's write lock
serialises the allocate-rename-commit section, and the busy timeout makes them wait.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from polar.errors import PolarError
from polar.files import atomic_write, fsync_dir
from polar.skills.model import (
    Measurement,
    PolicySpec,
    Skill,
    SkillError,
    SkillLoadError,
    SkillNotFound,
    check_hooks,
    resolve_hook,
    sha256_file,
)

INDEX_FILE = "library.sqlite"
WEIGHTS_FILE = "weights.safetensors"
MANIFEST_FILE = "manifest.json"
STAGING = ".staging"
BUSY_TIMEOUT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS skills (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    manifest TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
-- The highest version ever given to a name, so a removed version number is never reused.
CREATE TABLE IF NOT EXISTS names (name TEXT PRIMARY KEY, last_version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    measurement TEXT NOT NULL
);
"""


def default_root() -> Path:
    """Where registrations go when no library is named: `$POLAR_SKILLS`, else the workspace's
    `skills/` folder (see `polar.skills.search_path`)."""
    if env := os.environ.get("POLAR_SKILLS"):
        return Path(env).expanduser()
    from polar.workspace import user_dir

    return user_dir("skills")


SHIPPED_READ_ONLY = ("{root} is the skill library shipped with Polar, which Polar never writes "
                     "into; run from your own workspace (`polar init DIR`, then cd DIR) or name a "
                     "library with --library (or $POLAR_SKILLS)")


def shipped_library(root: Path) -> SkillLibrary:
    """The shipped library at `root`, read-only."""
    return SkillLibrary(root, read_only=SHIPPED_READ_ONLY.format(root=root))


def parse_ref(ref: str) -> tuple[str, int | None]:
    """`goto` -> ("goto", None); `goto@3` -> ("goto", 3); `goto@latest` -> ("goto", None)."""
    name, sep, ver = ref.partition("@")
    if not sep or ver == "latest":
        return name, None
    if not ver.isdigit() or int(ver) < 1:
        raise SkillNotFound(f"{ref!r}: the version after '@' must be a positive integer or 'latest'")
    return name, int(ver)


class SkillLibrary:
    """A skill library rooted at a folder. Cheap to create; every call opens its own
    connection, so an instance may be used across `fork` and from several processes."""

    def __init__(self, root: str | Path | None = None, *, read_only: str | None = None) -> None:
        """`read_only`: why this library must never be written (e.g. it is the shipped one);
        every write then raises SkillError with that text."""
        if root is None:
            root = default_root()
            from polar.workspace import is_shipped

            if read_only is None and not os.environ.get("POLAR_SKILLS") and is_shipped(root):
                read_only = SHIPPED_READ_ONLY.format(root=root)  # run from the checkout itself
        self.root = Path(root).expanduser()
        self.index = self.root / INDEX_FILE
        self.read_only = read_only

    @property
    def layers(self) -> list[SkillLibrary]:
        """The libraries searched, highest precedence first (one folder: itself)."""
        return [self]

    # --- connections ----------------------------------------------------------------------

    def _writable(self) -> bool:
        if self.read_only:
            return False
        if self.index.exists():
            return os.access(self.index, os.W_OK) and os.access(self.root, os.W_OK)
        parent = self.root if self.root.exists() else self.root.parent
        return os.access(parent, os.W_OK)

    @contextlib.contextmanager
    def _connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        if write:
            if self.read_only:
                raise SkillError(self.read_only)
            if not self._writable():
                raise SkillError(f"skill library {self.root} is read-only; set POLAR_SKILLS to a writable folder")
            self.root.mkdir(parents=True, exist_ok=True)
        try:
            if write:
                conn = sqlite3.connect(self.index, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                conn.executescript(_SCHEMA)
            elif not self.index.exists():
                conn = sqlite3.connect(":memory:", isolation_level=None)  # an empty library
                conn.executescript(_SCHEMA)
            else:
                uri = f"file:{self.index}?mode=ro" if not self._writable() else f"file:{self.index}"
                conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                if self._writable():
                    conn.executescript(_SCHEMA)
            try:
                yield conn
            finally:
                conn.close()
        except sqlite3.Error as err:
            raise self._index_error(err) from None

    def _index_error(self, err: Exception) -> SkillLoadError:
        """A clear error for a broken index: which file, and how to rebuild it."""
        if isinstance(err, sqlite3.OperationalError) and "locked" in str(err):
            return SkillLoadError(f"{self.index}: still locked by another process after "
                                  f"{BUSY_TIMEOUT_S:g} s ({err})")
        return SkillLoadError(
            f"{self.index}: the skill index cannot be read ({type(err).__name__}: {err}); rebuild it "
            f"from the manifests with: polar skills doctor --rebuild-index --library {self.root}")

    # --- reading --------------------------------------------------------------------------

    def _from_row(self, conn: sqlite3.Connection, name: str, version: int, manifest: str) -> Skill:
        try:
            skill = Skill.model_validate_json(manifest)
        except ValueError as err:  # pydantic's ValidationError: a row no version of Polar wrote
            raise self._index_error(err) from None
        skill._dir = self.root / name / str(version)
        rows = conn.execute(
            "SELECT measurement FROM evaluations WHERE name=? AND version=? ORDER BY id", (name, version)
        ).fetchall()
        skill._evaluations = [Measurement.model_validate_json(r[0]) for r in rows]
        return skill

    def get(self, ref: str) -> Skill:
        """The manifest of `name` (latest) or `name@version`; its files are checked on load."""
        name, version = parse_ref(ref)
        with self._connect() as conn:
            if version is None:
                row = conn.execute(
                    "SELECT version, manifest FROM skills WHERE name=? ORDER BY version DESC LIMIT 1", (name,)
                ).fetchone()
            else:
                row = conn.execute(
                    "SELECT version, manifest FROM skills WHERE name=? AND version=?", (name, version)
                ).fetchone()
            if row is None:
                known = [r[0] for r in conn.execute("SELECT DISTINCT name FROM skills ORDER BY name")]
                what = f"version {version} of skill {name!r}" if version else f"skill {name!r}"
                raise SkillNotFound(f"no {what} in {self.root} (skills here: {', '.join(known) or 'none'})")
            skill = self._from_row(conn, name, row[0], row[1])
        if not (skill.path / MANIFEST_FILE).is_file():  # type: ignore[operator]
            raise SkillLoadError(f"{skill.path / MANIFEST_FILE}: missing (the index lists {skill.ref})")  # type: ignore[operator]
        check_contained(self.root, skill.path)  # type: ignore[arg-type]
        return skill

    def list(self, all_versions: bool = False) -> list[Skill]:
        """Skills sorted by name; only the latest version of each unless `all_versions`."""
        with self._connect() as conn:
            rows = conn.execute("SELECT name, version, manifest FROM skills ORDER BY name, version").fetchall()
            skills = [self._from_row(conn, n, v, m) for n, v, m in rows]
        if all_versions:
            return skills
        latest: dict[str, Skill] = {}
        for s in skills:
            latest[s.name] = s
        return list(latest.values())

    def fingerprint(self) -> str:
        """A hash of everything planners and the skill runner read from this library: each
        version's manifest, weights hash and recorded evaluations, and the hook files."""
        parts = [f"{s.ref}:{s.weights_sha256}:{_sha(s.manifest_json())}:"
                 f"{_sha(json.dumps([m.model_dump(mode='json') for m in s.evaluations]))}"
                 for s in self.list(all_versions=True)]
        hooks = self.root / "hooks"
        if hooks.is_dir():
            parts += [f"hooks/{p.name}:{sha256_file(p)[:16]}" for p in sorted(hooks.glob("*.py"))]
        return _sha("|".join(parts))

    def versions(self, name: str) -> list[int]:
        with self._connect() as conn:
            return [r[0] for r in conn.execute("SELECT version FROM skills WHERE name=? ORDER BY version", (name,))]

    def search(self, text: str, harness: Any = None, limit: int | None = None,
               include_incompatible: bool = False) -> list[Skill]:
        """Skills ranked for `text` (BM25), harness compatibility and measured success."""
        from polar.skills.search import rank

        return [s for s, _ in rank(self.list(), text, harness, include_incompatible)][:limit]

    # --- writing --------------------------------------------------------------------------

    def register(self, skill: Skill, tensors: dict[str, Any] | None = None) -> Skill:
        """Store a new version of `skill` atomically; returns it with its version set. A skill
        whose hooks do not resolve is refused before it uses a version number."""
        if skill.kind == "policy" and not tensors:
            raise SkillError(f"{skill.name}: a policy skill needs its weights (tensors)")
        try:  # a dangling hook is refused now, not at the skill's first run
            check_hooks(skill, self.root)
        except SkillLoadError as err:
            raise SkillLoadError(f"skill {skill.name}: {err}") from None
        self.clean_staging()  # what registrations killed earlier left behind
        staging = self.root / STAGING / f"{skill.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        for _ in range(10):  # another registration may remove an empty .staging meanwhile
            try:
                staging.mkdir(parents=True)
                break
            except FileNotFoundError:
                continue
        try:
            sha = _write_weights(staging, tensors) if tensors else None
            _pause("after_write")
            return self._commit(skill, staging, sha)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
            with contextlib.suppress(OSError):
                staging.parent.rmdir()  # only when no other registration is staging

    def _commit(self, skill: Skill, staging: Path, sha: str | None) -> Skill:
        with self._connect(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")  # takes the write lock: allocate + rename + insert
            target: Path | None = None
            try:
                version = _next_version(conn, skill.name)
                final = skill.model_copy(update={"version": version, "weights_sha256": sha})
                final = Skill.model_validate(final.model_dump())  # re-validate the copy
                atomic_write(staging / MANIFEST_FILE, final.manifest_json(), durable=True)
                target = self.root / skill.name / str(version)
                if target.exists():  # an orphan of a registration killed before its commit
                    _discard(self.root, target)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(staging, target)
                fsync_dir(target.parent)
                _pause("after_rename")
                conn.execute(
                    "INSERT INTO skills(name, version, kind, manifest, created_at) VALUES (?,?,?,?,?)",
                    (final.name, version, final.kind, final.manifest_json(), final.provenance.created_at),
                )
                conn.execute(
                    "INSERT INTO names(name, last_version) VALUES (?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET last_version=excluded.last_version",
                    (final.name, version),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                if target is not None and target.exists() and not staging.exists():
                    _discard(self.root, target)
                raise
        final._dir = target
        return final

    def register_policy(self, policy: Any, **manifest: Any) -> Skill:
        """Register a `polar.rl.policy.Policy` (anything with `to_state()`) as a policy skill."""
        tensors, config = policy.to_state()
        manifest.setdefault("kind", "policy")
        loader = manifest.pop("loader", None) or f"{type(policy).__module__}:{type(policy).__qualname__}"
        manifest["policy"] = PolicySpec(loader=loader, config=config)
        return self.register(Skill(**manifest), tensors=tensors)

    def revise(self, ref: str, changes: dict[str, Any], note: str, keep_evaluations: bool = False) -> Skill:
        """A new version of `ref` with some manifest fields changed (its description,
        parameters, preconditions, effects, hooks, ...) and the same weights: provenance is
        kept, its `source` says what was revised (`note`). `keep_evaluations` copies the
        recorded measurements too: only when the change cannot alter how the skill acts on
        the arguments they were measured with."""
        old = self.get(ref)
        fixed = {"name", "version", "kind", "policy", "weights_sha256", "provenance"}
        if bad := sorted(set(changes) & fixed):
            raise SkillError(f"revise {old.ref}: {bad} cannot change in a revision (register a new skill)")
        tensors = None
        if old.kind == "policy":
            from safetensors.torch import load_file

            tensors = load_file(str(old.path / WEIGHTS_FILE))  # type: ignore[operator]
        source = f"{old.ref} revised: {note}" + (f" (was: {old.provenance.source})" if old.provenance.source else "")
        data = old.model_dump() | changes
        data["provenance"] = old.provenance.model_copy(update={"source": source}).model_dump()
        new = self.register(Skill.model_validate(data), tensors=tensors)
        for m in old.evaluations if keep_evaluations else []:
            self.record_evaluation(new, m)
        return new

    def record_evaluation(self, skill: Skill, measurement: Measurement) -> None:
        """Attach a measured success rate to `skill`'s version (the manifest stays immutable)."""
        with self._connect(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("SELECT 1 FROM skills WHERE name=? AND version=?",
                            (skill.name, skill.version)).fetchone() is None:
                conn.execute("ROLLBACK")
                raise SkillNotFound(f"{skill.ref} is no longer in {self.root}")
            conn.execute("INSERT INTO evaluations(name, version, measurement) VALUES (?,?,?)",
                         (skill.name, skill.version, measurement.model_dump_json()))
            conn.execute("COMMIT")
        skill._evaluations.append(measurement)

    def remove(self, ref: str) -> list[str]:
        """Remove `name@version`, or every version of `name`. Returns the refs removed."""
        name, version = parse_ref(ref)
        with self._connect(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")
            q, p = ("name=? AND version=?", (name, version)) if version else ("name=?", (name,))
            gone = [r[0] for r in conn.execute(f"SELECT version FROM skills WHERE {q}", p)]
            if not gone:
                conn.execute("ROLLBACK")
                raise SkillNotFound(f"no skill {ref!r} in {self.root}")
            conn.execute(f"DELETE FROM skills WHERE {q}", p)
            conn.execute(f"DELETE FROM evaluations WHERE {q}", p)
            conn.execute("COMMIT")
        # Rows first, folders second: a crash in between leaves only invisible orphans.
        for v in gone:
            _discard(self.root, self.root / name / str(v))
        with contextlib.suppress(OSError):
            (self.root / name).rmdir()  # only when empty
        return [f"{name}@{v}" for v in gone]

    def clean_staging(self) -> list[Path]:
        """Remove the staging folders of registrations whose process is gone (killed)."""
        removed: list[Path] = []
        staging = self.root / STAGING
        if staging.is_dir():
            for d in staging.iterdir():
                if not _owner_alive(d.name):
                    shutil.rmtree(d, ignore_errors=True)
                    removed.append(d)
        return removed

    def cleanup(self) -> list[Path]:
        """Remove staging folders of dead registrations and version folders without a row."""
        removed = self.clean_staging()
        if not self.index.exists():
            return removed
        with self._connect(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")  # no registration is between rename and commit now
            try:
                rows = {(n, v) for n, v in conn.execute("SELECT name, version FROM skills")}
                for vd in sorted(self._version_folders()):
                    if (vd.parent.name, int(vd.name)) not in rows:
                        _discard(self.root, vd)
                        removed.append(vd)
            finally:
                conn.execute("COMMIT")
        return removed


    def rebuild_index(self) -> tuple[list[str], list[str], Path | None]:
        """Rebuild `library.sqlite` from the manifests of the version folders (after the index
        was corrupted or lost). Folders whose manifest or weights do not check out are left
        out. The old index is kept beside the new one; evaluations it still holds are carried
        over. Returns the refs indexed, the folders left out (with why) and the old index's
        new path."""
        if not self.root.is_dir():
            raise SkillError(f"{self.root}: no such skill library folder")
        if not self._writable():
            raise SkillError(f"skill library {self.root} is read-only")
        self.clean_staging()
        evaluations = self._old_evaluations()
        skills: list[Skill] = []
        skipped: list[str] = []
        for vd in sorted(self._version_folders()):
            try:
                skills.append(_verified_manifest(vd))
            except (PolarError, OSError, ValueError) as err:  # PolarError: ConfigError, SkillError
                skipped.append(f"{vd}: {err}")
        tmp = self.root / f".{INDEX_FILE}.{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN")
            for sk in skills:
                conn.execute("INSERT INTO skills(name, version, kind, manifest, created_at) VALUES (?,?,?,?,?)",
                             (sk.name, sk.version, sk.kind, sk.manifest_json(), sk.provenance.created_at))
                conn.execute("INSERT INTO names(name, last_version) VALUES (?, ?) ON CONFLICT(name) DO UPDATE "
                             "SET last_version=MAX(last_version, excluded.last_version)", (sk.name, sk.version))
            kept = {(sk.name, sk.version) for sk in skills}
            conn.executemany("INSERT INTO evaluations(name, version, measurement) VALUES (?,?,?)",
                             [e for e in evaluations if (e[0], e[1]) in kept])
            conn.execute("COMMIT")
        finally:
            conn.close()
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        old: Path | None = None
        if self.index.exists():
            old = self.index.with_name(f"{INDEX_FILE}.old-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(self.index, old)
        os.replace(tmp, self.index)
        fsync_dir(self.root)
        return [sk.ref for sk in skills], skipped, old

    def _version_folders(self) -> Iterator[Path]:
        """`<name>/<version>/` folders holding a manifest (what a registration renames in)."""
        if not self.root.is_dir():
            return
        for d in self.root.iterdir():
            if d.is_dir() and not d.name.startswith(".") and d.name != "recipes":
                yield from (vd for vd in d.iterdir() if vd.name.isdigit() and (vd / MANIFEST_FILE).is_file())

    def _old_evaluations(self) -> list[tuple[str, int, str]]:
        """The evaluations the current index still yields (none when it is unreadable)."""
        if not self.index.exists():
            return []
        try:
            conn = sqlite3.connect(f"file:{self.index}?mode=ro", uri=True)
            try:
                return list(conn.execute("SELECT name, version, measurement FROM evaluations ORDER BY id"))
            finally:
                conn.close()
        except sqlite3.Error:
            return []


def check_contained(root: Path, folder: Path) -> None:
    """A skill's version folder and every file in it stay inside the library (a library from
    elsewhere must not point its weights or code at the rest of the machine through `..` or a
    symlink); a SkillLoadError names the entry."""
    from polar.files import leaves

    for p in [folder, *sorted(folder.iterdir())] if folder.is_dir() else [folder]:
        if leaves(root, p):
            raise SkillLoadError(f"{p}: leaves the skill library {root} (a symlink pointing to {p.resolve()}); "
                                 "a skill's files must be inside its folder")


def _verified_manifest(folder: Path) -> Skill:
    """The manifest of a version folder, checked against the folder's name and its weights."""
    from polar.config import read_text

    check_contained(folder.parent.parent, folder)
    skill = Skill.model_validate_json(read_text(folder / MANIFEST_FILE))
    if (skill.name, skill.version) != (folder.parent.name, int(folder.name)):
        raise SkillLoadError(f"the manifest says {skill.ref}, the folder {folder.parent.name}@{folder.name}")
    if skill.weights_sha256 is not None:
        wfile = folder / WEIGHTS_FILE
        if not wfile.is_file() or sha256_file(wfile) != skill.weights_sha256:
            raise SkillLoadError(f"{WEIGHTS_FILE} is missing or does not match the manifest's sha256")
    skill._dir = folder
    return skill

# --- loading weights ----------------------------------------------------------------------

_POLICY_CACHE: dict[tuple[str, str], Any] = {}


def load_skill_policy(skill: Skill) -> Any:
    """Rebuild a policy skill's network from its folder; verifies the weights' sha256."""
    if skill.kind != "policy" or skill.policy is None:
        raise SkillError(f"{skill.ref} is a {skill.kind} skill, not a policy")
    if skill.path is None:
        raise SkillLoadError(f"{skill.ref}: not loaded from a library, so it has no weights file")
    wfile = skill.path / WEIGHTS_FILE
    key = (str(wfile), skill.weights_sha256 or "")
    if key in _POLICY_CACHE:
        return _POLICY_CACHE[key]
    if skill.library_root is not None:
        check_contained(skill.library_root, skill.path)
    if not wfile.is_file():
        raise SkillLoadError(f"{wfile}: weights file missing for skill {skill.ref}")
    actual = sha256_file(wfile)
    if skill.weights_sha256 and actual != skill.weights_sha256:
        raise SkillLoadError(
            f"{wfile}: weights file is corrupt (sha256 {actual[:12]}..., manifest says "
            f"{skill.weights_sha256[:12]}...); re-register skill {skill.ref}")
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    # Skill networks are tiny: one thread per forward pass beats torch's thread pool, which
    # contends with everything else on a loaded machine.
    torch.set_num_threads(1)
    try:
        tensors = load_file(str(wfile))
    except (SafetensorError, OSError, ValueError) as err:
        raise SkillLoadError(f"{wfile}: cannot read weights for {skill.ref}: {err}") from None
    loader = resolve_hook(skill.policy.loader, f"{skill.ref} policy.loader", skill.library_root)
    try:
        policy = loader.from_state(tensors, skill.policy.config)
    except Exception as err:  # the loader's own error types vary; name the file either way
        raise SkillLoadError(f"{wfile}: weights do not fit {skill.ref}'s policy config: {err}") from None
    _POLICY_CACHE[key] = policy
    return policy


# --- helpers ------------------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _next_version(conn: sqlite3.Connection, name: str) -> int:
    a = conn.execute("SELECT last_version FROM names WHERE name=?", (name,)).fetchone()
    b = conn.execute("SELECT MAX(version) FROM skills WHERE name=?", (name,)).fetchone()
    return max(a[0] if a else 0, b[0] or 0) + 1


def _write_weights(folder: Path, tensors: dict[str, Any]) -> str:
    """Write, fsync, read back and compare: what is committed is exactly what was given."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / WEIGHTS_FILE
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(path))
    with open(path, "rb") as f:
        os.fsync(f.fileno())
    back = load_file(str(path))
    if set(back) != set(tensors):
        raise SkillLoadError(f"{path}: tensors read back differ in names from those written")
    for k, v in tensors.items():
        if back[k].dtype != v.dtype or not torch.equal(back[k], v.detach().cpu()):
            raise SkillLoadError(f"{path}: tensor {k!r} read back differs from the one written")
    return sha256_file(path)


def _discard(root: Path, folder: Path) -> None:
    """Move out of sight first (one rename), then delete at leisure."""
    trash = root / STAGING / f"trash.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    trash.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(folder, trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _owner_alive(staging_name: str) -> bool:
    """Staging folders are `<name>.<pid>.<hex>` or `trash.<pid>.<hex>`."""
    parts = staging_name.split(".")
    if len(parts) < 3 or not parts[-2].isdigit():
        return False
    pid = int(parts[-2])
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pause(stage: str) -> None:
    """Test hook: with POLAR_SKILLS_PAUSE_AT=<stage>, touch POLAR_SKILLS_PAUSE_FILE and sleep,
    so a test can `kill -9` a registration at a precise point."""
    if os.environ.get("POLAR_SKILLS_PAUSE_AT") != stage:
        return
    if marker := os.environ.get("POLAR_SKILLS_PAUSE_FILE"):
        Path(marker).write_text(json.dumps({"pid": os.getpid(), "stage": stage}))
    time.sleep(float(os.environ.get("POLAR_SKILLS_PAUSE_S", "60")))
