"""`pulumi preview --policy-pack policies`: assemble the pack (constructing it serves it and never returns)."""

import sys
from pathlib import Path

# The CLI runs this file with policies/ as the working directory; the rules live in the
# `policies` package, so the repository root has to be importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack

from policies.pack import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES)
