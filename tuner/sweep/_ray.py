"""Trials as Ray tasks: one task = one trial = one server lifetime.

Settings that matter (docs/optuna-ray-facts.md, "Ray"): ``max_retries=0`` (a crashed trial
must not silently run again); one GPU per trial for a real engine, a custom
``tuner_sim_slot`` resource for the simulator; the server starts in the worker's own
process group so Ray's clean-up reaches it; a deadline ends with ``ray.cancel(force=True)``
and the cancelled ref is never read. A local instance is started quietly unless an address
(``auto`` or ``host:port``) joins an existing cluster.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import uuid
from typing import Any

from tuner.errors import UserError
from tuner.errors import clip
from tuner.processes import secrets_withheld
from tuner.sweep._base import Outcome
from tuner.sweep._base import TrialJob
from tuner.sweep._base import TrialRunner
from tuner.sweep._base import execute
from tuner.trial import TrialResult


SIM_RESOURCE = "tuner_sim_slot"


def check_address(address: str, timeout_s: float = 5.0) -> None:
    """Refuse an address where no Ray head answers, in a few seconds and one line:
    ``ray.init`` would retry for half a minute or more, printing a warning a second, with
    no word to the person waiting. A ``host:port`` must be a GCS that answers the first
    question ``ray.init`` asks it (its cluster id): a port that refuses, a server that is
    not gRPC, a proxy or firewall that answers every connection with HTTP 404 (what an
    unreachable address meets on a network with a transparent proxy), or a gRPC server
    that is not Ray's, are refused. A ``ray://`` (Ray Client) address must answer HTTP/2."""
    import socket

    client = address.startswith("ray://")
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise UserError(f"--ray-address {address}: expected auto, none or HOST:PORT"
                        ) from None
    try:
        with socket.create_connection((host or "127.0.0.1", number), timeout=timeout_s) as s:
            speaks_grpc = _answers_http2(s)
    except OSError as exc:
        raise UserError(f"--ray-address {address}: no Ray head answers there "
                        f"({exc.strerror or exc.__class__.__name__}); start one with "
                        "`ray start --head` or pass --ray-address auto") from None
    why = None if speaks_grpc else "no gRPC"
    if speaks_grpc and not client:
        why = _not_a_gcs(f"{host or '127.0.0.1'}:{number}", timeout_s)
    if why is not None:        # ray.init would wait, printing warnings
        raise UserError(f"--ray-address {address}: something answers there, but not a Ray "
                        f"head ({why}); Ray's GCS port is 6379 by default (`ray status` "
                        "prints it)")


#: What ``ray.init`` first asks the GCS (``gcs_service.proto``); an empty request is a valid
#: ``GetClusterIdRequest``.
_CLUSTER_ID = "/ray.rpc.NodeInfoGcsService/GetClusterId"


def _not_a_gcs(target: str, timeout_s: float) -> str | None:
    """None when the gRPC server at ``target`` answers Ray's cluster-id call (or asks for
    the cluster's token: a head with token auth), else what it answered instead, short."""
    import grpc

    channel = grpc.insecure_channel(target)
    try:
        channel.unary_unary(_CLUSTER_ID)(b"", timeout=timeout_s)
    except grpc.RpcError as exc:
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return None
        details = exc.details() if callable(getattr(exc, "details", None)) else ""
        said = " ".join(filter(None, [code.name.lower() if code is not None else None,
                                      (details or "").splitlines()[0] if details else None]))
        return clip(f"Ray's first call was answered: {said or 'nothing'}", 120)
    finally:
        channel.close()
    return None


#: An HTTP/2 client's connection preface and an empty SETTINGS frame (RFC 9113 3.4, 6.5).
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _answers_http2(sock: socket.socket) -> bool:
    """Whether the server on ``sock`` answers an HTTP/2 preface with a SETTINGS frame, as
    every gRPC server (Ray's GCS) does; an HTTP/1 server, an SSH daemon or silence do not."""
    try:
        sock.sendall(_H2_PREFACE)
        head = b""
        while len(head) < 9:
            chunk = sock.recv(9 - len(head))
            if not chunk:
                return False
            head += chunk
    except OSError:
        return False
    return head[3] == 0x04           # frame type SETTINGS


def execute_on_node(job: TrialJob) -> dict[str, Any]:
    """:func:`execute` in a Ray worker, the result naming the node it ran on (``worker``)."""
    import ray

    data = execute(job)
    data["worker"] = ray.get_runtime_context().get_node_id()
    return data


class RayRunner(TrialRunner):
    def __init__(self, *, address: str | None, gpu: bool, slots: int | None) -> None:
        import ray

        self._ray = ray
        self._refs: dict[int, Any] = {}       # before anything can fail: close() reads it
        self._reaper: subprocess.Popen[bytes] | None = None
        self.node_id: str | None = None
        self.started_local = address in (None, "", "local")
        if self.started_local:
            self._start_local(slots)
        else:
            if address is not None and address != "auto":
                check_address(address)           # Ray itself retries for minutes
                os.environ.setdefault("RAY_AUTH_MODE", "token")
            try:
                ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UserError(f"--ray-address {address}: cannot join the Ray cluster "
                                f"({exc.__class__.__name__}: {str(exc).splitlines()[0]})"
                                ) from None
        res = ray.cluster_resources()
        self.session_dir = self._session_dir()
        if gpu:
            gpus = int(res.get("GPU", 0))
            if gpus == 0:
                self.close()
                raise UserError("the Ray cluster has no GPU: a trial asking for one would wait "
                                "forever. Join a cluster with GPUs (--ray-address), or tune "
                                "the simulator (--engine sim).")
            self.slots = min(slots or gpus, gpus)
            opts: dict[str, Any] = {"num_gpus": 1, "num_cpus": 1}
        elif res.get(SIM_RESOURCE):
            self.slots = min(slots or int(res[SIM_RESOURCE]), int(res[SIM_RESOURCE]))
            opts = {"resources": {SIM_RESOURCE: 1}, "num_cpus": 0}
        else:
            self.slots = slots or 1
            opts = {"num_cpus": 1}
        self._task = ray.remote(max_retries=0)(execute_on_node).options(**opts)

    def _start_local(self, slots: int | None) -> None:
        """Start a local Ray instance, watched from before it starts: Ray's processes
        inherit this runner's owner tag (``node_id``), so the watcher ends them if the
        driver is killed even during ``ray.init`` (which once left Ray's agents running for
        a minute). The trial servers carry the same tag."""
        from tuner.sweep import _reaper
        from tuner.sweep._scheduler import OWNER_ENV

        self.node_id = f"ray-{uuid.uuid4().hex}"
        before = os.environ.get(OWNER_ENV)
        os.environ[OWNER_ENV] = self.node_id        # inherited by GCS, raylet, agents
        try:
            self._reaper = _reaper.start(self.node_id)
            ncpu = os.cpu_count() or 1
            with secrets_withheld():   # Ray's processes, and the workers they start,
                self._ray.init(            # copy the environment: not the study's secrets
                    address="local", include_dashboard=False, log_to_driver=False,
                    logging_level=logging.ERROR, num_cpus=max(ncpu, 2),
                    resources={SIM_RESOURCE: float(slots or max(1, ncpu // 2))})
        finally:
            if before is None:
                os.environ.pop(OWNER_ENV, None)
            else:
                os.environ[OWNER_ENV] = before

    def _session_dir(self) -> str | None:
        try:
            node = getattr(self._ray._private.worker, "_global_node", None)
            return str(node.get_session_dir_path()) if node is not None else None
        except AttributeError:       # not started yet, or Ray moved its internals
            return None

    @property
    def inflight(self) -> list[int]:
        return list(self._refs)

    def submit(self, job: TrialJob) -> None:
        self._refs[job.key] = self._task.remote(job)

    def poll(self, timeout: float) -> list[Outcome]:
        ray = self._ray
        if not self._refs:
            return []
        by_ref = {ref: key for key, ref in self._refs.items()}
        ready, _ = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=timeout)
        out = []
        for ref in ready:
            key = by_ref[ref]
            del self._refs[key]
            try:
                data = ray.get(ref)
                out.append(Outcome(key, "result", result=TrialResult.model_validate(data)))
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                    ray.exceptions.ObjectLostError, ray.exceptions.OwnerDiedError) as exc:
                out.append(Outcome(key, "worker_lost", detail=str(exc).splitlines()[0]))
            except ray.exceptions.TaskCancelledError:
                continue
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None) or exc
                out.append(Outcome(key, "error", detail=f"{cause.__class__.__name__}: {cause}"))
        return out

    def cancel(self, key: int) -> None:
        ref = self._refs.pop(key, None)
        if ref is not None:
            self._ray.cancel(ref, force=True)   # its value is never read (it may be bogus)

    def close(self) -> None:
        for key in list(self._refs):
            self.cancel(key)
        if self._ray.is_initialized():
            self._ray.shutdown()
        if self._reaper is not None:   # a clean exit: sweep what Ray left, stop the watcher
            from tuner.sweep import _reaper

            if self.node_id:
                _reaper.kill_node(self.node_id)
            self._reaper.kill()        # it waited for this process to end (up to 30 s)
            self._reaper.wait(timeout=5)
            self._reaper = None
