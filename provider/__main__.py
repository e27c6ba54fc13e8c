"""The component provider: hosts `ServingStack` and `ServingLayer` with the Python SDK's component
provider host, which derives the package schema from their type annotations
(pulumi/provider/experimental/host.py `component_provider_host`)."""

from importlib import metadata

from pulumi.provider.experimental import component_provider_host

from stacks.serving_stack import COMPONENTS, PACKAGE_NAME

component_provider_host(COMPONENTS, name=PACKAGE_NAME, version=metadata.version("b200-serving"))
