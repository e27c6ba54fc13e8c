from common.gke_versions import (
    B200_MIN_GKE_VERSION,
    CAPACITY_BUFFER_MIN_GKE_VERSION,
    INFERENCE_POOL_MIN_GKE_VERSION,
    satisfies_gke_minimum,
    version_at_least,
)


def test_a_minor_floor_meets_a_minimum_of_its_minor_only_at_the_minors_first_patch() -> None:
    """`1.35` may resolve to 1.35.0 or 1.35.1: below capacity buffers' 1.35.2-gke.1842000."""
    assert satisfies_gke_minimum("1.34", INFERENCE_POOL_MIN_GKE_VERSION)  # a 1.34.0 build
    assert satisfies_gke_minimum("1.33", B200_MIN_GKE_VERSION)
    assert not satisfies_gke_minimum("1.32", B200_MIN_GKE_VERSION)  # 1.32.2
    assert not satisfies_gke_minimum("1.35", CAPACITY_BUFFER_MIN_GKE_VERSION)  # 1.35.2
    assert satisfies_gke_minimum("1.36", CAPACITY_BUFFER_MIN_GKE_VERSION)
    assert satisfies_gke_minimum("1.35.2-gke.1842000", CAPACITY_BUFFER_MIN_GKE_VERSION)
    assert not satisfies_gke_minimum("1.33", INFERENCE_POOL_MIN_GKE_VERSION)
    assert not satisfies_gke_minimum("1.34.0-gke.1625999", INFERENCE_POOL_MIN_GKE_VERSION)


def test_versions_the_api_reports_compare_number_by_number() -> None:
    assert version_at_least("1.34.10-gke.100", "1.34.2-gke.1000")
    assert not version_at_least("1.34.0-gke.1625999", "1.34.0-gke.1626000")
    assert not version_at_least("", "1.34.0-gke.1626000")
