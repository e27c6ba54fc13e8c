"""InferenceGateway's example command on its own: an external gateway is curled directly."""

from __future__ import annotations

from components.gateway import curl_example


def test_external_gateway_is_curled_directly() -> None:
    example = curl_example("kubectl get gateway g", "ns", "m", internal=False)
    assert example.startswith("curl -sS http://$(kubectl get gateway g)/v1/chat/completions ")
