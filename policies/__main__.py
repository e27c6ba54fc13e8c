"""`pulumi preview --policy-pack policies`, `pulumi policy publish`: assemble the pack (constructing
it serves it and never returns).

How the CLI runs a Python pack (pulumi/pulumi sdk/python/cmd/pulumi-language-python/main.go
RunPlugin, kind analyzer): `python -u -m pulumi.policy ENGINE PACK_FOLDER` in the pack's virtualenv
with the pack folder as working directory, and pulumi.policy runs this file with
`runpy.run_path(PACK_FOLDER)` (pulumi/policy/__main__.py), which puts the folder itself, not its
parent, on sys.path. A published pack is unpacked into a folder of another name
(pkg/backend/httpstate/policypack.go installRequiredPolicy). So the pack's modules are loaded as
the package `policies` from the folder this file is in, wherever it is and whatever it is called:
the import system is told where the package is (importlib, "Importing a source file directly");
sys.path is left alone.
"""

import importlib.util
import sys
from pathlib import Path

PACKAGE = "policies"


def load_pack_package() -> None:
    folder = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location(
        PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the policy pack from {folder}")
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)


if __package__ != PACKAGE:  # run as the CLI runs it; `python -m policies` has the package already
    load_pack_package()

from pulumi_policy import PolicyPack  # noqa: E402 (the package is loaded above)

from policies.pack import PACK_NAME, POLICIES  # noqa: E402

PolicyPack(name=PACK_NAME, policies=POLICIES)
