"""The Google Cloud regions that exist, so a misspelled or invented region is refused before anything
is declared (a region without A4 capacity is another matter: policy LLM-GPU-004 warns about it).

Compiled 2026-11 from Google Cloud's published location tables ("Geography and regions",
https://cloud.google.com/about/locations; the per-product tables that list every region, e.g.
https://cloud.google.com/workload-manager/docs/evaluate/locations and
https://docs.cloud.google.com/unified-maintenance/docs/locations), 42 regions. `gcloud compute
regions list` is the authority: a region Google opens later is refused until it is added here.
"""

GCP_REGIONS = frozenset(
    {
        "africa-south1",
        "asia-east1",
        "asia-east2",
        "asia-northeast1",
        "asia-northeast2",
        "asia-northeast3",
        "asia-south1",
        "asia-south2",
        "asia-southeast1",
        "asia-southeast2",
        "australia-southeast1",
        "australia-southeast2",
        "europe-central2",
        "europe-north1",
        "europe-north2",
        "europe-southwest1",
        "europe-west1",
        "europe-west2",
        "europe-west3",
        "europe-west4",
        "europe-west6",
        "europe-west8",
        "europe-west9",
        "europe-west10",
        "europe-west12",
        "me-central1",
        "me-central2",
        "me-west1",
        "northamerica-northeast1",
        "northamerica-northeast2",
        "northamerica-south1",
        "southamerica-east1",
        "southamerica-west1",
        "us-central1",
        "us-east1",
        "us-east4",
        "us-east5",
        "us-south1",
        "us-west1",
        "us-west2",
        "us-west3",
        "us-west4",
    }
)


def known_region(region: str) -> str:
    if region not in GCP_REGIONS:
        raise ValueError(
            f"'{region}' is not a Google Cloud region; allowed: one of the {len(GCP_REGIONS)} Google Cloud regions "
            "(2026-11; `gcloud compute regions list` shows them) like us-central1 or europe-west4; a region without "
            "A4 capacity is allowed, with the advisory LLM-GPU-004"
        )
    return region
