"""The component provider: hosts `ServingStack` and `ServingLayer` with the Python SDK's component
provider host, which derives the package schema from their type annotations
(pulumi/provider/experimental/host.py `component_provider_host`). It runs on the installed wheel
(provider/requirements.txt), whose one import name is gke_b200_serving (hatch_build.py)."""

from importlib import metadata

from gke_b200_serving.stacks.serving_stack import COMPONENTS, PACKAGE_NAME
from pulumi.provider.experimental import component_provider_host

component_provider_host(COMPONENTS, name=PACKAGE_NAME, version=metadata.version("b200-serving"))
