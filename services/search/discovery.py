"""Simulator replicas from the Kubernetes API: watch the simulator Service's EndpointSlices.

A ``dns:///`` target of a headless Service re-resolves only after a connection fails, so
simulator pods the autoscaler adds mid-campaign would sit idle. In a cluster the search
service therefore lists and watches the EndpointSlices labelled
``kubernetes.io/service-name=<service>`` (a Role allowing get/list/watch on
``endpointslices`` in its namespace, nothing else) and keeps the set of *ready*
``address:port`` endpoints; each change is handed to ``on_change(added, removed)``, which
adds channels for new pods and drains the ones that left (``GrpcPipeline.set_replicas``).

The protocol is the API's own list-then-watch: list (the list's ``resourceVersion``), watch
from that version, follow each event's version (bookmarks included); a watch that ends or
breaks resumes from the last version after a doubling backoff; ``410 Gone`` (an ERROR event
or the HTTP status: the version was compacted away) re-lists, and the new list replaces the
state, so what changed meanwhile is reported as added / removed. No gRPC here: this module
only computes addresses (the layer test keeps gRPC in the shells and listed clients).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

log = logging.getLogger(__name__)

SERVICE_LABEL = "kubernetes.io/service-name"
HTTP_GONE = 410

OnChange = Callable[[frozenset[str], frozenset[str]], None]


def slice_endpoints(obj: Mapping[str, Any], port_name: str = "grpc") -> frozenset[str]:
    """The ready ``address:port`` targets of one EndpointSlice (the API's JSON object).

    The port is the one named ``port_name`` (or the slice's only port); an endpoint whose
    ``conditions.ready`` is false (starting, failing its probe, terminating) is left out, an
    unset one counts as ready (API docs: "a nil value should be interpreted as true"); of an
    endpoint's addresses the first is used (the API calls them fungible)."""
    ports = [p for p in (obj.get("ports") or []) if p.get("port") is not None]
    named = [p for p in ports if p.get("name") == port_name] or (ports if len(ports) == 1 else [])
    if not named:
        return frozenset()
    port = int(named[0]["port"])
    ipv6 = obj.get("addressType") == "IPv6"
    out = set()
    for ep in obj.get("endpoints") or []:
        if (ep.get("conditions") or {}).get("ready") is False or not ep.get("addresses"):
            continue
        address = ep["addresses"][0]
        out.add(f"[{address}]:{port}" if ipv6 else f"{address}:{port}")
    return frozenset(out)


def _version(obj: Mapping[str, Any]) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv else None


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class EndpointSliceWatcher:
    """List + watch the EndpointSlices of one Service; report ready-endpoint changes.

    ``api`` is a ``kubernetes.client.DiscoveryV1Api`` (``in_cluster`` builds one from the
    pod's service-account token). ``run`` is the loop; ``start`` runs it on a daemon thread
    and ``stop`` ends it. ``on_change`` is called on that thread, never with two empty sets,
    and an exception in it is logged, not fatal."""

    def __init__(self, api: Any, namespace: str, service: str, on_change: OnChange, *, port_name: str = "grpc",
                 watch_timeout_s: int = 300, backoff_s: float = 0.5, max_backoff_s: float = 30.0):
        if not namespace or not service:
            raise ValueError("EndpointSliceWatcher needs a namespace and a Service name")
        self._api = api
        self.namespace, self.service = namespace, service
        self._on_change = on_change
        self._port_name = port_name
        self._watch_timeout_s = watch_timeout_s
        self._backoff_s, self._max_backoff_s = backoff_s, max_backoff_s
        self._slices: dict[str, frozenset[str]] = {}
        self._endpoints: frozenset[str] = frozenset()
        self._rv: str | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._watch: Any = None
        self._response: Any = None  # the open watch stream (a urllib3 response)
        self._thread: threading.Thread | None = None
        self.lists = 0  # list calls that succeeded (1 + the re-lists after 410 Gone)
        self.gone = 0  # 410 Gone answers (resourceVersion compacted away)
        self.errors = 0  # other failures of a list or watch (each followed by a backoff)

    @classmethod
    def in_cluster(cls, namespace: str, service: str, on_change: OnChange, **kwargs: Any) -> EndpointSliceWatcher:
        """With the pod's service account (``kubernetes`` client, extra ``k8s``)."""
        try:
            from kubernetes import client, config
        except ImportError as exc:  # pragma: no cover - the extra is installed where this runs
            raise RuntimeError("EndpointSlice discovery needs the kubernetes client: pip install 'lastv2x[k8s]'"
                               ) from exc
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException as exc:
            raise RuntimeError(f"EndpointSlice discovery of {namespace}/{service} runs in a pod with a service "
                               f"account token (unset LASTV2X_SEARCH_SIMULATOR_ENDPOINTSLICES elsewhere): {exc}"
                               ) from None
        return cls(client.DiscoveryV1Api(client.ApiClient(configuration)), namespace, service, on_change, **kwargs)

    @property
    def selector(self) -> str:
        return f"{SERVICE_LABEL}={self.service}"

    @property
    def endpoints(self) -> frozenset[str]:
        """The ready ``address:port`` of every slice, as last reported."""
        with self._lock:
            return self._endpoints

    @property
    def resource_version(self) -> str | None:
        return self._rv

    # ── state ─────────────────────────────────────────────────────────────
    def _replace(self, slices: dict[str, frozenset[str]]) -> None:
        with self._lock:
            self._slices = slices
            new = frozenset().union(*slices.values()) if slices else frozenset()
            added, removed = new - self._endpoints, self._endpoints - new
            self._endpoints = new
        if added or removed:
            log.info("simulator replicas of %s/%s: +%s -%s (%d ready)", self.namespace, self.service,
                     sorted(added), sorted(removed), len(new))
            try:
                self._on_change(added, removed)
            except Exception:
                log.exception("replica change handler failed (+%s -%s)", sorted(added), sorted(removed))

    def apply_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``, ``BOOKMARK``) on the state."""
        rv = _version(obj)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            name = str((obj.get("metadata") or {}).get("name", ""))
            slices = dict(self._slices)
            if kind == "DELETED":
                slices.pop(name, None)
            else:
                slices[name] = slice_endpoints(obj, self._port_name)
            self._replace(slices)
        if rv:
            self._rv = rv

    def apply_list(self, body: Mapping[str, Any]) -> None:
        """An EndpointSliceList replaces the state (what vanished is reported removed)."""
        items: Iterable[Mapping[str, Any]] = body.get("items") or []
        self._replace({str(i["metadata"]["name"]): slice_endpoints(i, self._port_name) for i in items})
        self._rv = _version(body)

    # ── the API ───────────────────────────────────────────────────────────
    def _list(self) -> None:
        resp = self._api.list_namespaced_endpoint_slice(self.namespace, label_selector=self.selector,
                                                        _preload_content=False)
        try:
            body = json.loads(resp.data)
        finally:
            resp.release_conn()
        self.apply_list(body)
        self.lists += 1

    def _watch_once(self) -> int:
        """Watch from the last version until the server ends the stream; the events handled."""
        from kubernetes import watch

        def call(*args: Any, **kwargs: Any) -> Any:  # keeps the response, so that stop can end a quiet stream
            self._response = self._api.list_namespaced_endpoint_slice(*args, **kwargs)
            if self._stopped.is_set():
                self._interrupt()
            return self._response

        w = watch.Watch(return_type="object")  # raw dicts: no model validation of the API's nulls
        self._watch = w
        if self._stopped.is_set():
            return 0
        seen = 0
        for event in w.stream(call, self.namespace,
                              label_selector=self.selector, resource_version=self._rv,
                              allow_watch_bookmarks=True, timeout_seconds=self._watch_timeout_s):
            if self._stopped.is_set():
                break
            self.apply_event(str(event.get("type")), event.get("raw_object") or {})
            seen += 1
        return seen

    def _interrupt(self) -> None:
        """Unblock a read of the open watch stream from another thread (urllib3 >= 2.3 ``shutdown``)."""
        response = self._response
        try:
            getattr(response, "shutdown", response.close)()
        except Exception:  # already closed, or closing raced with the stream's own end
            pass

    def run(self) -> None:
        """List, then watch and resume until ``stop``; 410 Gone re-lists; other errors back off."""
        failures = 0
        while not self._stopped.is_set():
            try:
                if self._rv is None:
                    self._list()
                self._watch_once()
                failures = 0
            except Exception as exc:  # the client raises ApiException, urllib3 errors, OSError
                if self._stopped.is_set():
                    break
                failures += 1
                if _status(exc) == HTTP_GONE:
                    self.gone += 1
                    self._rv = None  # compacted: re-list, at once the first time
                    log.info("EndpointSlices of %s/%s: resourceVersion gone, re-listing", self.namespace,
                             self.service)
                    if failures == 1:
                        continue
                else:
                    self.errors += 1
                    log.warning("EndpointSlices of %s/%s: %s; retrying", self.namespace, self.service,
                                str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
                self._stopped.wait(min(self._max_backoff_s, self._backoff_s * 2 ** (failures - 1)))

    def start(self) -> EndpointSliceWatcher:
        self._thread = threading.Thread(target=self.run, name=f"endpointslices-{self.service}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """End the loop: the open watch stream is shut down, so a quiet one does not hold the thread."""
        self._stopped.set()
        if self._watch is not None:
            self._watch.stop()
        if self._response is not None:
            self._interrupt()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)


def parse_service_ref(text: str) -> tuple[str, str]:
    """``namespace/service`` -> (namespace, service); a ValueError names what is wrong."""
    namespace, sep, service = text.strip().partition("/")
    if not sep or not namespace or not service or "/" in service:
        raise ValueError(f"expected <namespace>/<service>, got {text!r}")
    return namespace, service


__all__ = ["EndpointSliceWatcher", "parse_service_ref", "slice_endpoints"]
