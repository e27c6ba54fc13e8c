"""The IPv4 ranges a Google Cloud VPC accepts as internal addresses, shared by the stack config (subnet,
Pod and Service ranges, an internal load balancer's source ranges) and the policy pack (LLM-NET-009),
so the config never accepts what the pack then blocks. Imports nothing of the project.

VPC "Subnets", Valid IPv4 ranges (cloud.google.com/vpc/docs/subnets#valid-ranges) and GKE "VPC-native
clusters", IP address ranges (cloud.google.com/kubernetes-engine/docs/concepts/alias-ips): RFC 1918 and
the special-purpose ranges below. Privately used public ranges (PUPI) are valid there too, but need the
cluster's default SNAT turned off, which this stack does not declare, so they are left out. Python's
`is_private` is not this list: it accepts loopback (127.0.0.0/8) and link-local (169.254.0.0/16), which
no subnet may use, and refuses 100.64.0.0/10, which GCP accepts. The table was taken from those pages as
quoted in the project's notes; the pages could not be opened in full here (unverified in detail).
"""

from __future__ import annotations

import ipaddress

VPC_RANGES = {
    "10.0.0.0/8": "RFC 1918",
    "172.16.0.0/12": "RFC 1918",
    "192.168.0.0/16": "RFC 1918",
    "100.64.0.0/10": "shared address space, RFC 6598",
    "192.0.0.0/24": "IETF protocol assignments, RFC 6890",
    "192.0.2.0/24": "documentation TEST-NET-1, RFC 5737",
    "198.51.100.0/24": "documentation TEST-NET-2, RFC 5737",
    "203.0.113.0/24": "documentation TEST-NET-3, RFC 5737",
    "192.88.99.0/24": "former 6to4 relay, RFC 7526",
    "198.18.0.0/15": "benchmark testing, RFC 2544",
    "240.0.0.0/4": "reserved (class E), RFC 5735 and RFC 1112",
}
ALLOWED_RANGES_TEXT = "RFC 1918 or " + ", ".join(
    cidr for cidr, source in VPC_RANGES.items() if not source.startswith("RFC 1918")
)
_NETWORKS = tuple(ipaddress.IPv4Network(cidr) for cidr in VPC_RANGES)


def is_vpc_range(value: str) -> bool:
    """Whether `value` is an IPv4 CIDR block inside one of the VPC's valid internal ranges."""
    try:
        network = ipaddress.IPv4Network(value)
    except ValueError:
        return False
    return any(network.subnet_of(vpc) for vpc in _NETWORKS)
