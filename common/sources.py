"""The public sources the product cites by title and link (what a user can open and check)."""

import ipaddress
import re
import urllib.parse

WRITEUP_TITLE = "1 Million Tokens per Second: Qwen 3.5 27B on GKE with B200 GPUs"
WRITEUP_URL = (
    "https://medium.com/google-cloud/1-million-tokens-per-second-qwen-3-5-27b-on-gke-with-b200-gpus-161da5c1b592"
)
# The benchmark write-up the stack reproduces, as plan.md, docs and the measurements file cite it.
WRITEUP = f'"{WRITEUP_TITLE}" (Medium, Google Cloud - Community, March 2026, {WRITEUP_URL})'
# The vLLM release the write-up's runs were on (its text); measurements.yaml records it as measuredRelease.
WRITEUP_VLLM_RELEASE = "0.18.0"
# The fix of 0.18.0's degraded FP8 accuracy of Qwen 3.5 on Blackwell, first released in 0.19.0:
# DeepGEMM is switched off for the qwen3_5 model types on SM100, their FP8 linear layers run on CUTLASS.
DEEPGEMM_FIX_URL = "https://github.com/vllm-project/vllm/pull/38083"

# Google Cloud's public pricing pages the planner's prices come from or are to be checked against
# (title, URL): plan.md cites them beside each price, with what is derived and how.
GPU_PRICING = ('"GPU pricing" (Compute Engine)', "https://cloud.google.com/compute/gpus-pricing")
# Billing of a reservation: from its creation to its deletion, used or not, at the on-demand rate with any discount.
RESERVATIONS = (
    '"Reservations of Compute Engine zonal resources" (Compute Engine)',
    "https://cloud.google.com/compute/docs/instances/reservations-overview",
)
CUD_OVERVIEW = (
    '"Resource-based committed use discounts" (Compute Engine)',
    "https://cloud.google.com/compute/docs/instances/signing-up-committed-use-discounts",
)
ABOUT_FLEX_START = ('"About Flex-start VMs"', "https://cloud.google.com/compute/docs/instances/about-flex-start-vms")
GKE_PRICING = ('"Google Kubernetes Engine pricing"', "https://cloud.google.com/kubernetes-engine/pricing")
DISK_PRICING = ('"Disk and image pricing" (Compute Engine)', "https://cloud.google.com/compute/disks-image-pricing")


# Taking a resource out of a stack's state and not out of the cloud (`pulumi state delete`).
STATE_DELETE = (
    '"Removing resources without deleting them" (Pulumi docs)',
    "https://www.pulumi.com/docs/iac/operations/stack-management/removing-resources-without-deleting-them/",
)
# Flex-start VMs draw on preemptible quota (Vertex AI's page; GKE's does not say it).
FLEX_START_QUOTA = (
    '"Use Flex-start VMs with inference" (Vertex AI)',
    "https://docs.cloud.google.com/vertex-ai/docs/predictions/use-flex-start-vms",
)


def cited(page: tuple[str, str]) -> str:
    """A public page as the product cites it: its title and its URL."""
    title, url = page
    return f"{title}, {url}"


# What a reader cannot open: the team's notebook by name or section, a path into ../shared, "issue 12" /
# "issues 21 and 25", a number like "#37618" that is not part of a link, and "vllm#55673" (an owner/repo#N
# names its repository).
UNCITABLE = re.compile(
    r"RECIPE\.md|RECIPE sections?\b|\.\./shared|/work/shared|\b[Ii]ssues? \d+|(?<![\w/&\[])#\d{3,}\b"
    r"|(?<![\w/.-])[A-Za-z][\w.-]*#\d{3,}\b"
)
# A file on someone's machine: an absolute or home path of two or more parts, or a file: URL (a path in a
# web address, after its host, is not one).
LOCAL_PATH = re.compile(r"(?<![\w.:/-])~?/[\w.-]+/[\w./-]+|(?i:\bfile:/\S*)")
# What else a cited source (a measurement's `source`, `bench-compare --source`) may point to that a reader
# cannot open: a relative path or a file's name (../notes/x, ./x, notes/bench.md, bench.md), a home (~/x, ~bob/x) or
# Windows path or one from a variable (C:\\x, D:/x, a \\\\server\\share path, $HOME/x), an issue, pull
# request or ticket by number (issue #42, PR 12, #42) or by its key (ticket ML-1234, JIRA ML-1234, gh-42), an
# address other than http(s) (gs://, s3://) or a git remote (git@host:org/repo). Every part is tried only
# where it can start and is bounded (a scheme of at most 32 characters), so a long text costs linear time.
NOT_PUBLIC = re.compile(
    r"(?<![\w.:/@=?&-])\.{1,2}/\S+"
    r"|(?<![\w.:/@=?&~-])(?:[\w-]+(?:/[\w.-]+)*/)?[\w-]+\.(?:md|txt|log|ya?ml|json|csv|tsv|ipynb|py|sh|html?|pdf)\b"
    r"|(?<![\w/.:-])~[\w.-]{0,32}/\S*|\$\{?[A-Za-z_]\w*\}?[/\\]\S*|(?<![\w./:\\-])[A-Za-z]:[\\/]\S*|(?<!\S)\\\\[^\s\\]+\\\S*"
    r"|(?i:\b(?:issues?|PRs?|pull requests?|tickets?|bugs?)\s*#\d+|\b(?:issue|PR|pull request|ticket) \d+\b)"
    r"|(?i:(?<![#/\w-])(?:issues?|tickets?|bugs?|jira)(?:\s*:\s*|\s+)[a-z][a-z0-9]*-\d+\b|(?<![#/\w-])gh-\d+\b)"
    r"|(?<![\w/&\[])#\d+\b"
    r"|(?i:(?<![a-z0-9+.-])(?!https?://)[a-z][a-z0-9+.-]{0,31}://\S*)"
    r"|(?<![\w.@/-])[\w.-]+@[\w-]+(?:\.[\w-]+)*:(?!//)[\w./~-]+"
)
# A web address, to the next space; its host is read with urllib.parse and checked by `_private_host`.
WEB_ADDRESS = re.compile(r"(?i:https?://\S+)")
# Names no public resolver answers for a reader: in-cluster, on-premises and reserved ones (RFC 2606, RFC
# 6761, RFC 8375, the Kubernetes Service domain).
PRIVATE_SUFFIXES = (
    ".internal",
    ".local",
    ".localdomain",
    ".localhost",
    ".corp",
    ".lan",
    ".intranet",
    ".home",
    ".home.arpa",
    ".private",
    ".svc",
    ".test",
    ".invalid",
    ".example",
)
# A label of a host a client reads as a number (0x7f.1, 127.1, 2130706433 all reach 127.0.0.1).
NUMERIC_LABEL = re.compile(r"(?i:0x[0-9a-f]*|\d+)")
TRAILING_PUNCTUATION = ".,;:!?'\"*>)}"


def _private_host(address: str) -> bool:
    """Whether the web address `address` points to a host only its writer reaches: an IP address that is not
    global (loopback, RFC 1918, link-local and the metadata server, shared 100.64/10, unique-local IPv6, ...),
    a name without a dot, a name of numbers, or a name under one of the PRIVATE_SUFFIXES. Punctuation after
    the host (a comma, a closing bracket of the sentence) is not part of it."""
    authority = re.split(r"[/?#]", address.split("://", 1)[1], maxsplit=1)[0].rstrip(TRAILING_PUNCTUATION)
    if "[" not in authority:
        authority = authority.rstrip("]")
    try:
        parts = urllib.parse.urlsplit(f"//{authority}")
        host, _ = (parts.hostname or "").rstrip("."), parts.port
    except ValueError:  # a bracketed host left open, a port out of range
        return True
    try:
        return not ipaddress.ip_address(host).is_global
    except ValueError:
        pass
    labels = host.split(".")
    return (
        len(labels) < 2
        or all(map(NUMERIC_LABEL.fullmatch, labels))
        or f".{host}".endswith(PRIVATE_SUFFIXES)
        or _names_a_private_address(labels)
    )


def _names_a_private_address(labels: list[str]) -> bool:
    """Whether a name spells a private IPv4 address that wildcard DNS services resolve it to
    (10.1.2.3.nip.io, 10-1-2-3.sslip.io)."""
    spelled = [".".join(labels[start : start + 4]) for start in range(len(labels) - 3)]
    spelled += [label.replace("-", ".") for label in labels if label.count("-") == 3]
    for text in spelled:
        try:
            if not ipaddress.IPv4Address(text).is_global:
                return True
        except ValueError:
            continue
    return False


def uncitable(text: str) -> list[str]:
    """What in `text` a reader cannot open, as cited sources must not hold."""
    found = [match for pattern in (UNCITABLE, LOCAL_PATH, NOT_PUBLIC) for match in pattern.finditer(text)]
    found += [match for match in WEB_ADDRESS.finditer(text) if _private_host(match.group(0))]
    spans = {(match.start(), match.group(0)) for match in found}  # two rules may name the same words
    return [text for _, text in sorted(spans)]


# A URL's host: letters of any script, digits, dots and hyphens (not a closing quote or a full stop after it). The
# scheme is bounded: unbounded, each letter of a long run of them began a scan to the run's end (an attacker: a
# 0.9 MB measurements file, about an hour); the host found is the same.
URL_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://(?:[^/\s@]*@)?([\w.-]+)")


def lookalike_host(text: str) -> str | None:
    """The first host of a URL in `text` with letters outside ASCII, which may look like others (a Cyrillic o
    in cloud.google.com names another site); an internationalized name is cited in its xn-- form."""
    return next((match[1] for match in URL_HOST.finditer(text) if not match[1].isascii()), None)
