"""The Hugging Face token as a Kubernetes Secret; the value stays a Pulumi secret throughout."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

SECRET_NAME = "hf-token"
SECRET_KEY = "token"


@dataclass(frozen=True)
class HuggingFaceTokenArgs:
    namespace: pulumi.Input[str]
    token: pulumi.Output[str]
    labels: dict[str, str]


class HuggingFaceToken(pulumi.ComponentResource):
    TYPE = "llm-serving:serving:HuggingFaceToken"
    secret: k8s.core.v1.Secret

    def __init__(self, name: str, args: HuggingFaceTokenArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.TYPE, name, None, opts)
        token: pulumi.Output[str] = pulumi.Output.secret(args.token)
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=SECRET_NAME, namespace=args.namespace, labels=args.labels),
            type="Opaque",
            string_data={SECRET_KEY: token},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.secret_name = SECRET_NAME
        self.secret_key = SECRET_KEY
        self.register_outputs({"secretName": self.secret.metadata.name})
