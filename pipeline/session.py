"""The one place xstream builds a Spark session: local, loopback-only, quiet.

Every Spark session the project starts (the example and `xstream pipeline`, the Spark test
tier, benchmarks/spark_bench.py) comes from `local()`, so these settings live only here:

    network   the driver binds and advertises 127.0.0.1 (spark.driver.bindAddress and
              spark.driver.host, and SPARK_LOCAL_IP for the JVM), so a local run never
              resolves the hostname to a LAN interface or listens on one
    logging   log4j2.properties next to this file replaces Spark's default profile: WARN
              on stderr (INFO once started, with verbose=True), known noise at ERROR; the JVM's
              stderr is pumped through a filter that drops the one warning no log4j or JVM
              setting can silence ("Using incubator modules", printed by the JVM itself
              for the --add-modules that Spark's launcher always passes)
    start-up  no UI, no console progress bars, few shuffle partitions; quick_start adds
              C1-only JIT and the serial GC (start-up in half the time, slower on long jobs)
    spawn     the JVM's launcher is started without fork(): PySpark passes Popen a
              preexec_fn (SIGINT ignored in the child), which makes CPython fork() instead
              of vfork(), so every pthread_atfork handler runs in the child. gRPC's (grpcio
              >= 1.80, grpc/grpc#43055) restarts its poller there, on an epoll fd that
              close_fds then closes: with gRPC channels in use in this process (a Client
              opened before the session), the child printed gRPC errors or died before
              exec ("Java gateway process exited"), a few starts in a hundred. Here /bin/sh
              ignores SIGINT and execs the launcher (an ignored signal stays ignored across
              exec) and Popen gets no preexec_fn: CPython vforks, no atfork handler runs
    workers   PySpark's Python workers run this interpreter (sys.executable), which has
              pyarrow and xstream installed

JVM options (memory, GC, log4j file) and SPARK_LOCAL_IP take effect only when the JVM starts:
the first session of a process. Later sessions in the same process reuse that JVM.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import IO, Any

LOOPBACK = "127.0.0.1"
LOG4J2 = Path(__file__).with_name("log4j2.properties")
# JVM stderr lines dropped on their way to ours (see "logging" above).
_NOISE = re.compile(rb"^WARNING: Using incubator modules: ")
_TAIL_LINES = 40  # of the JVM's stderr, quoted when it dies while starting
# The JVM launcher's command runs behind this: SIGINT ignored, then exec (see "spawn" above).
_IGNORING_SIGINT = ["/bin/sh", "-c", 'trap "" INT; exec "$@"', "spark-launcher"]
_SPAWNING = threading.Lock()  # one JVM launch at a time swaps PySpark's Popen


def local(
    app: str,
    *,
    cores: int = 2,
    memory: str = "2g",
    verbose: bool = False,
    quick_start: bool = False,
    jvm_output: Path | None = None,
) -> Any:
    """A local[cores] SparkSession bound to 127.0.0.1, with Spark's logging at WARN (INFO
    when verbose). `jvm_output`, if given, also receives every line the JVM (and the Python
    workers it forks) prints on stderr after filtering, as shown on ours."""
    from pyspark import SparkConf  # noqa: PLC0415
    from pyspark.core.context import SparkContext  # noqa: PLC0415
    from pyspark.sql import SparkSession  # noqa: PLC0415

    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    conf = SparkConf().setAll(list(settings(app, cores, memory, quick_start).items()))
    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        SparkContext(conf=conf, gateway=_launch_gateway(conf, jvm_output))
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    # A change of level also lifts the WARN threshold Spark's shell filter puts on the
    # console, so INFO must come through setLogLevel, not log4j2.properties.
    spark.sparkContext.setLogLevel("INFO" if verbose else "WARN")
    return spark


def settings(app: str, cores: int, memory: str, quick_start: bool) -> dict[str, str]:
    java = [f"-Dlog4j2.configurationFile={LOG4J2.as_uri()}"]
    if quick_start:
        java += ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    return {
        "spark.master": f"local[{cores}]",
        "spark.app.name": app,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.driver.host": LOOPBACK,
        "spark.driver.memory": memory,
        "spark.driver.extraJavaOptions": " ".join(java),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
    }


class JvmStartError(RuntimeError):
    """The JVM exited before it gave PySpark its port; carries the last lines it printed."""


def _launch_gateway(conf: Any, jvm_output: Path | None) -> Any:
    """Start the JVM as PySpark would, but with its stderr piped through `_pump` from the
    first byte: a JVM that dies while starting says why on our stderr and in the error."""
    from pyspark import java_gateway  # noqa: PLC0415

    read_end, write_end = os.pipe()
    tail: deque[bytes] = deque(maxlen=_TAIL_LINES)
    pump = threading.Thread(
        target=_pump,
        args=(os.fdopen(read_end, "rb"), jvm_output, tail),
        name="spark-jvm-stderr",
        daemon=True,
    )
    pump.start()
    popen_kwargs: dict[str, Any] = {"stderr": write_end}
    try:
        with _popen_replaced(java_gateway):
            # pyspark leaves launch_gateway unannotated.
            return java_gateway.launch_gateway(conf, popen_kwargs=popen_kwargs)  # type: ignore[no-untyped-call]
    except Exception as exc:
        if getattr(exc, "getCondition", lambda: None)() != "JAVA_GATEWAY_EXITED":
            raise
        os.close(write_end)
        write_end = -1
        pump.join(timeout=5)  # the JVM is gone: its stderr ends as soon as ours is closed
        said = b"".join(tail).decode(errors="replace").rstrip() or "(nothing on stderr)"
        said = f"the Spark JVM exited while starting; its last words:\n{said}"
        raise JvmStartError(said) from exc
    finally:
        if write_end >= 0:
            os.close(write_end)  # the JVM holds its own copy


@contextmanager
def _popen_replaced(module: ModuleType) -> Iterator[None]:
    """`module.Popen` (PySpark's java_gateway imports it by name) is `spawn_jvm` meanwhile."""
    namespace = vars(module)
    with _SPAWNING:
        original = namespace["Popen"]
        namespace["Popen"] = spawn_jvm
        try:
            yield
        finally:
            namespace["Popen"] = original


def spawn_jvm(
    command: Sequence[str], *, preexec_fn: Callable[[], object] | None = None, **kwargs: Any
) -> subprocess.Popen[bytes]:
    """PySpark's Popen of the JVM launcher without fork() ("spawn" above). WARNING: the only
    preexec_fn it is given is PySpark's own, which ignores SIGINT (launch_gateway, PySpark
    4.x): that is what the shell does instead; tests/spark/test_session.py checks that
    launch_gateway still calls `Popen` by name."""
    argv = [*_IGNORING_SIGINT, *command] if preexec_fn is not None else list(command)
    return subprocess.Popen(argv, **kwargs)


def _pump(src: IO[bytes], copy: Path | None, tail: deque[bytes]) -> None:
    """Copy the JVM's stderr to ours until it closes, without the known noise lines, keeping
    the last few in `tail`. Runs for the JVM's lifetime: a JVM whose stderr pipe fills up
    would block."""
    sink = copy.open("ab") if copy is not None else None
    for line in iter(src.readline, b""):
        if _NOISE.match(line):
            continue
        tail.append(line)
        if sink is not None:
            sink.write(line)
            sink.flush()
        try:  # sys.stderr is whatever it is now (pytest swaps it per test), maybe closed
            sys.stderr.write(line.decode(errors="replace"))
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # keep draining regardless
