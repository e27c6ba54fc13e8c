"""The engine's secret environment variables as one Kubernetes Secret; every value stays a Pulumi secret
(encrypted in the state, `[secret]` in a preview) and reaches the pod only through
`valueFrom.secretKeyRef`, as the Hugging Face token does (components/hf_token.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

# The variable vLLM's OpenAI server reads its API key from (vllm/envs.py; api_server.py takes
# `args.api_key or envs.VLLM_API_KEY`): set in engine.secretEnv, every request needs
# `Authorization: Bearer <key>`.
API_KEY_ENV = "VLLM_API_KEY"


def engine_env_secret_name(service_name: str) -> str:
    return f"{service_name}-engine-env"


def read_api_key(namespace: str, secret_name: str) -> str:
    """A shell assignment that reads the engine's API key from its Secret into $VLLM_API_KEY, so an
    example command can send it without any output holding the value."""
    jsonpath = f"{{.data.{API_KEY_ENV}}}"
    return f"{API_KEY_ENV}=$(kubectl -n {namespace} get secret {secret_name} -o jsonpath='{jsonpath}' | base64 -d)"


@dataclass(frozen=True)
class EngineEnvSecretArgs:
    name: str
    namespace: pulumi.Input[str]
    # variable name -> its value, a secret Output (the key in the Secret is the variable's name)
    values: Mapping[str, pulumi.Output[str]]
    labels: dict[str, str]


class EngineEnvSecret(pulumi.ComponentResource):
    TYPE = "llm-serving:serving:EngineEnvSecret"
    secret: k8s.core.v1.Secret

    def __init__(self, name: str, args: EngineEnvSecretArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        values: dict[str, pulumi.Output[str]] = {key: pulumi.Output.secret(value) for key, value in args.values.items()}
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=args.labels),
            type="Opaque",
            string_data=values,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"secretName": self.secret.metadata.name})
