"""The real grammars of the identifiers a stack file names, ASCII only.

Each check returns the problem as text (empty when the value is valid) so that the config model
can report it in one line.
"""

from __future__ import annotations

import posixpath
import re

from common.quantities import QUANTITY_MAX, quantity_value

# huggingface_hub utils/_validators.py validate_repo_id: REPO_ID_REGEX, no "--" or "..", no ".git" end.
# The stack needs the `org/name` form: the checkpoint path and the clone URL are built from it.
HF_REPO_ID = re.compile(
    r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?/[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$"
)

# A git branch, tag or commit (git-check-ref-format, narrowed to ASCII): never a leading "-", which
# `git checkout` would read as an option.
GIT_REVISION = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_./-]{0,126}[A-Za-z0-9_])?$")

# distribution/reference regexp.go (the OCI reference grammar):
#   reference := name [ ":" tag ] [ "@" digest ]; name := [domain "/"] path-component ["/" path-component]*
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
OCI_REFERENCE = re.compile(rf"^(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$")
OCI_NAME_MAX = 255

# Kubernetes object names (k8s.io/apimachinery pkg/util/validation/validation.go): an RFC 1123 label (IsDNS1123Label) is
# at most 63 of [-a-z0-9], alphanumeric at both ends; an RFC 1035 label (IsDNS1035Label) also starts with a letter. A
# Namespace is an RFC 1123 label (apimachinery pkg/api/validation/generic.go: ValidateNamespaceName = NameIsDNSLabel), a
# Service an RFC 1035 label (kubernetes pkg/apis/core/validation/validation.go: ValidateServiceName =
# NameIsDNS1035Label; https://kubernetes.io/docs/concepts/overview/working-with-objects/names/). Compute Engine resource
# names have the RFC 1035 grammar too (`[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters).
DNS_1123_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_1035_LABEL = r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_LABEL_MAX = 63
# A Secret's name is a DNS subdomain (IsDNS1123Subdomain: RFC 1123 labels joined by dots, at most 253 characters).
DNS_1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_SUBDOMAIN_MAX = 253
# A host name a certificate names: labels of at most 63, the last starting with a letter, so never an IP address
# (Gateway API v1 `Hostname`: "IPs are not allowed").
HOSTNAME = r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
# What each of these patterns allows, in words, for a refusal (stacks/config/pattern_words.py adds the model's own).
GRAMMAR_WORDS = {
    DNS_1035_LABEL: "1-63 lower-case letters, digits and hyphens, a letter first and no hyphen last (an RFC 1035 "
    "label)",
    DNS_1123_LABEL: "1-63 lower-case letters, digits and hyphens, a letter or digit at both ends (an RFC 1123 label)",
    DNS_1123_SUBDOMAIN: "lower-case letters, digits, hyphens and dots, like llm-tls or llm.example.com (a DNS name)",
    HOSTNAME: "a DNS name like llm.example.com (lower case, labels of 1-63 characters, not an IP address)",
}

# Resource Manager: 6-30 characters, lower-case letters, digits and hyphens, a letter first, no
# hyphen last; restricted strings may not appear.
GCP_PROJECT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
GCP_PROJECT_RESTRICTED = ("google", "ssl")


def hf_repo_problem(value: str) -> str:
    if not value.isascii() or not HF_REPO_ID.fullmatch(value):
        return "is not a Hugging Face model id 'org/name' (ASCII letters, digits, '-', '_', '.'; name <= 96)"
    if "--" in value or ".." in value:
        return "may not contain '--' or '..' (Hugging Face repo id rules)"
    if value.endswith(".git"):
        return "may not end with '.git' (Hugging Face repo id rules)"
    return ""


def revision_problem(value: str) -> str:
    if value.startswith("-"):
        return "may not start with '-' (git would read it as an option)"
    if not value.isascii() or not GIT_REVISION.fullmatch(value):
        return "is not a git branch, tag or commit (ASCII letters, digits, '_', '-', '.', '/'; <= 128)"
    if ".." in value or "//" in value or value.endswith(".lock") or "/." in value:
        return "is not a valid git ref name (no '..', '//', '/.' or '.lock' end)"
    return ""


def image_problem(value: str, *, tag_required: bool = False, digest_allowed: bool = True) -> str:
    match = OCI_REFERENCE.fullmatch(value) if value.isascii() else None
    if match is None:
        return "is not an OCI image reference [registry[:port]/]path[:tag][@digest] (lower-case path)"
    if len(match["name"]) > OCI_NAME_MAX:
        return f"has a repository name over {OCI_NAME_MAX} characters"
    if match["digest"] and not digest_allowed:
        return "carries a digest; set the digest in its own key (imageDigest)"
    if tag_required and not match["tag"]:
        return "needs an explicit tag (:vX.Y.Z); 'latest' by omission is not reproducible"
    if not match["tag"] and not match["digest"]:
        return "needs a tag or a digest; 'latest' by omission is not reproducible"
    return ""


def quantity_problem(value: str) -> str:
    amount = quantity_value(value)
    if amount is None:
        return "is not a Kubernetes quantity like 4, 500m, 16Gi or 1.5e3"
    if amount <= 0:
        return "must be greater than zero"
    if amount > QUANTITY_MAX:
        return "is larger than a Kubernetes quantity holds (2^63)"
    return ""


def project_id_problem(value: str) -> str:
    if not GCP_PROJECT_ID.fullmatch(value):
        return "is not a GCP project id (6-30 lower-case letters, digits, hyphens; a letter first, no hyphen last)"
    restricted = next((word for word in GCP_PROJECT_RESTRICTED if word in value), None)
    if restricted:
        return f"contains '{restricted}', which GCP project ids may not contain"
    return ""


def mount_path_problem(value: str) -> str:
    if not value.isascii() or not value.startswith("/"):
        return "must be an absolute ASCII path"
    if any(part in (".", "..") for part in value.split("/")):
        return "may not contain '.' or '..' components"
    if posixpath.normpath(value) != value or "//" in value:
        return f"is not normalised (use '{posixpath.normpath(value).replace('//', '/')}')"
    if not re.fullmatch(r"/|(/[A-Za-z0-9_.-]+)+", value):
        return "may only contain letters, digits, '_', '-', '.' and '/'"
    return ""
