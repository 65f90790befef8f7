"""deploy/: the Kubernetes manifests validate against the API schemas and agree with the proxy
(probes, drain, workers, the verdict store); the replicas compose file balances over both; a
replica's readiness does not hang on the upstream; stops wait out the drain; model servers get
the time a first start takes; `repair-proxy --version`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from proxy.settings.config import DEFAULT_DRAIN_TIMEOUT, load_settings
from proxy.settings.policy import load_policy

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s"
KUBERNETES_VERSIONS = ("1.29.0", "1.33.0", "1.37.0")
"""From the oldest release still common on managed clusters to the newest the validator knows."""


def kustomization() -> dict[str, Any]:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text())  # type: ignore[no-any-return]


def documents() -> list[dict[str, Any]]:
    """Every object `kubectl apply -k deploy/k8s` would create, the generated ConfigMap included."""
    docs = [doc for name in kustomization()["resources"] for doc in yaml.safe_load_all((K8S / name).read_text())]
    for generator in kustomization()["configMapGenerator"]:
        data = {name: (K8S / name).read_text() for name in generator["files"]}
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data})
    return docs


def one(kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def proxy_container() -> dict[str, Any]:
    (container,) = one("Deployment", "repair-proxy")["spec"]["template"]["spec"]["containers"]
    return container  # type: ignore[no-any-return]


def image_env() -> dict[str, str]:
    """The ENV lines of the Dockerfile (what the container starts with)."""
    env: dict[str, str] = {}
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            env.update(dict(re.findall(r"(\w+)=(\S+)", line)))
    return env


def cluster_settings() -> Any:
    """The settings a replica runs with: the image's environment, the pod's, the mounted config."""
    environ = {**image_env(), **{e["name"]: e["value"] for e in proxy_container().get("env", [])}}
    return load_settings(K8S / "config.toml", environ=environ)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_validates_against_the_kubernetes_schema(version: str) -> None:
    """Strict: an unknown or misspelt field fails, as `kubectl apply --validate=strict` would."""
    kinds = set()
    for doc in documents():
        kubernetes_validate.validate(doc, version, strict=True)
        kinds.add(doc["kind"])
    expected = {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "StatefulSet", "ConfigMap"}
    assert kinds == expected


def test_the_validator_rejects_a_broken_manifest() -> None:
    """The check above can fail: a misspelt field is refused."""
    broken = one("Deployment", "repair-proxy")
    broken["spec"]["replica"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def test_replicas_probes_and_the_drain_agree_with_the_proxy() -> None:
    """Two or more replicas; readiness is /readyz, liveness /healthz, on the port the proxy
    listens on; the grace period covers preStop, the drain and the supervisor's margin."""
    deployment = one("Deployment", "repair-proxy")
    settings = cluster_settings()
    pod = deployment["spec"]["template"]["spec"]
    container = proxy_container()
    assert deployment["spec"]["replicas"] >= 2
    assert container["readinessProbe"]["httpGet"]["path"].split("?")[0] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    (port,) = container["ports"]
    assert port["containerPort"] == settings.server.port
    assert settings.server.host == "0.0.0.0"
    pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    supervisor_margin = 5
    assert pod["terminationGracePeriodSeconds"] > pre_stop + settings.server.drain_timeout + supervisor_margin


def test_workers_match_the_cpu_limit_and_the_policy_loads() -> None:
    settings = cluster_settings()
    assert settings.server.workers == int(proxy_container()["resources"]["limits"]["cpu"])
    assert settings.repair.policy == "/etc/repair-proxy/policy.toml"
    mount = next(m for m in proxy_container()["volumeMounts"] if m["name"] == "config")
    assert mount["mountPath"] == "/etc/repair-proxy"
    assert load_policy(K8S / "policy.toml").name == "cluster"


def test_the_verdict_store_is_the_redis_service() -> None:
    """Every replica's store is the Redis Service of redis.yaml (not the image's SQLite file)."""
    settings = cluster_settings()
    service = one("Service", "repair-proxy-redis")
    match = re.fullmatch(r"redis://([\w-]+):(\d+)/\d+", settings.store.verdicts)
    assert match is not None, settings.store.verdicts
    assert match.group(1) == service["metadata"]["name"]
    assert int(match.group(2)) == service["spec"]["ports"][0]["port"]


def test_the_disruption_budget_and_autoscaler_target_the_deployment() -> None:
    labels = one("Deployment", "repair-proxy")["spec"]["selector"]["matchLabels"]
    assert one("PodDisruptionBudget", "repair-proxy")["spec"]["selector"]["matchLabels"] == labels
    assert one("Service", "repair-proxy")["spec"]["selector"] == labels
    hpa = one("HorizontalPodAutoscaler", "repair-proxy")["spec"]
    assert hpa["scaleTargetRef"]["name"] == "repair-proxy"
    assert hpa["minReplicas"] >= 2
    assert one("PodDisruptionBudget", "repair-proxy")["spec"]["minAvailable"] < hpa["minReplicas"]


def test_the_replicas_compose_file_balances_over_two_proxies_sharing_redis() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.replicas.yaml").read_text())
    services = compose["services"]
    proxies = sorted(name for name in services if name.startswith("repair-proxy-"))
    assert len(proxies) == 2
    for name in proxies:
        env = services[name]["environment"]
        assert env["REPAIR_PROXY_VERDICTS"] == "redis://redis:6379/0"
        assert "redis" in services[name]["depends_on"]
    conf = (DEPLOY / "nginx.replicas.conf").read_text()
    assert sorted(re.findall(r"server ([\w-]+):8400;", conf)) == proxies
    assert "proxy_buffering off;" in conf
    assert services["balancer"]["ports"] == ["127.0.0.1:8400:8400"]


def test_the_replicas_image_is_built_once_and_the_balancer_waits_for_healthy_replicas() -> None:
    """Issue 63: both replicas had the build section (the image built twice), and the balancer
    started with them, before they answered. One builds the tag the other runs, never pulled; the
    balancer waits for both to pass the image's healthcheck."""
    services = compose("replicas")["services"]
    proxies = sorted(name for name in services if name.startswith("repair-proxy-"))
    builders = [name for name in proxies if "build" in services[name]]
    assert builders == ["repair-proxy-1"]
    assert services["repair-proxy-1"]["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert {services[name]["image"] for name in proxies} == {"repair-proxy:local"}
    assert all(services[name]["pull_policy"] == "never" for name in proxies)
    waits = services["balancer"]["depends_on"]
    assert waits == {name: {"condition": "service_healthy"} for name in proxies}
    assert "HEALTHCHECK" in (DEPLOY / "Dockerfile").read_text()


def compose(name: str) -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / f"compose.{name}.yaml").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["ollama", "vllm", "llamacpp"])
def test_each_compose_file_keeps_verdicts_in_a_named_volume(name: str) -> None:
    """Cross-run memory survives `docker compose down` and a rebuild: the proxy's verdict file
    is in a named volume, where the image's VOLUME would otherwise leave an anonymous one."""
    spec = compose(name)
    proxy = spec["services"]["repair-proxy"]
    assert proxy["environment"]["REPAIR_PROXY_VERDICTS"] == "/data/verdicts.sqlite3"
    assert "verdicts:/data" in proxy["volumes"] and "verdicts" in spec["volumes"]


def test_the_ollama_compose_file_pulls_its_model_before_the_proxy_starts() -> None:
    spec = compose("ollama")
    assert spec["services"]["ollama-pull"]["entrypoint"][:2] == ["ollama", "pull"]
    assert (
        spec["services"]["repair-proxy"]["depends_on"]["ollama-pull"]["condition"] == "service_completed_successfully"
    )


def test_vllm_keeps_its_downloaded_model_and_llamacpp_reads_models_from_an_absolute_place() -> None:
    assert any(v.endswith(":/root/.cache/huggingface") for v in compose("vllm")["services"]["vllm"]["volumes"])
    (models,) = compose("llamacpp")["services"]["llama"]["volumes"]
    assert "./models" not in models and models.endswith(":/models:ro")


def test_the_build_context_leaves_out_the_virtual_environment_and_the_tests() -> None:
    ignored = (DEPLOY.parent / ".dockerignore").read_text().split()
    assert {".venv", ".git", "tests", "bench"} <= set(ignored)


def test_the_image_installs_the_otel_extra() -> None:
    """A cluster that sets `OTEL_EXPORTER_OTLP_ENDPOINT` for every pod asks for traces: without the
    SDK the proxy would refuse to start there (issue #52)."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    (install,) = re.findall(r"^RUN pip install (\S+)", text, re.MULTILINE)
    assert install.strip("'\"") == ".[otel]"


def healthcheck() -> str:
    """The Python code of the image's HEALTHCHECK."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    (code,) = re.findall(r'HEALTHCHECK .*?CMD python -c "(.*?)"\n', text + "\n")
    return str(code)


async def test_the_healthcheck_asks_the_port_the_proxy_listens_on(make_proxy) -> None:  # type: ignore[no-untyped-def]
    """Run for real: healthy against a proxy on the port REPAIR_PROXY_PORT names, unhealthy elsewhere."""
    import asyncio
    import os
    import sys

    from support import free_port

    proxy = await make_proxy()

    async def check(port: int) -> int:
        env = {**os.environ, "REPAIR_PROXY_PORT": str(port)}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            healthcheck(),
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return await process.wait()

    assert await check(proxy.port) == 0  # type: ignore[arg-type]
    assert await check(free_port()) != 0


def seconds(duration: str) -> float:
    """A compose duration (`130s`, `30m`, `1h30m`) in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s|ms|us)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 0.000001}
    return sum(float(n) * scale[u] for n, u in parts)


def test_the_default_drain_lets_a_long_generation_finish() -> None:
    """A rollout's SIGTERM lets a request in flight run two more minutes, by default and in the cluster."""
    assert load_settings(None, environ={}).server.drain_timeout == DEFAULT_DRAIN_TIMEOUT >= 120
    assert cluster_settings().server.drain_timeout >= DEFAULT_DRAIN_TIMEOUT


@pytest.mark.parametrize("name", ["ollama", "vllm", "llamacpp", "replicas"])
def test_compose_waits_out_the_drain_before_killing_a_proxy(name: str) -> None:
    """Docker's default stop grace (10 s) would cut a long generation at `compose down`."""
    drain = load_settings(None, environ={}).server.drain_timeout
    services = compose(name)["services"]
    proxies = [spec for service, spec in services.items() if service.startswith("repair-proxy")]
    assert proxies
    for spec in proxies:
        assert seconds(spec["stop_grace_period"]) >= drain + 5


@pytest.mark.parametrize(
    ("name", "service", "at_least"),
    [("vllm", "vllm", 20 * 60), ("llamacpp", "llama", 5 * 60), ("ollama", "ollama", 60)],
)
def test_model_servers_get_the_time_a_first_start_takes(name: str, service: str, at_least: float) -> None:
    """vLLM downloads and loads its model before /health answers, llama.cpp loads gigabytes:
    failed checks meanwhile do not count (`start_period`), so `depends_on: service_healthy`
    does not give up on a first start. Ollama's server answers at once; its pull is a service
    of its own that the proxy waits to complete, with no healthcheck to time out."""
    spec = compose(name)["services"]
    assert seconds(spec[service]["healthcheck"]["start_period"]) >= at_least
    assert spec["repair-proxy"]["depends_on"][service]["condition"] == "service_healthy"


async def test_the_readiness_probe_does_not_hang_on_the_upstream(make_proxy) -> None:  # type: ignore[no-untyped-def]
    """Run for real: with the upstream down, the path the manifest probes answers ready (agents
    get a 502 naming the cause instead of no replica at all), while plain /readyz says unready
    and both show the upstream's state."""
    import aiohttp
    from support import free_port

    proxy = await make_proxy(upstream_url=f"http://127.0.0.1:{free_port()}/v1")
    probe = proxy_container()["readinessProbe"]["httpGet"]["path"]
    async with aiohttp.ClientSession() as client:
        async with client.get(proxy.make_url(probe)) as response:
            assert response.status == 200
            assert (await response.json())["upstream_ready"] is False
        async with client.get(proxy.make_url("/readyz")) as response:
            assert response.status == 503
            assert (await response.json())["upstream_ready"] is False


def test_version_names_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    from proxy.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"repair-proxy {metadata.version('repair-proxy')}"
