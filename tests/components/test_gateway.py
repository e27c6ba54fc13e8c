"""InferenceGateway's example command on its own: an external gateway is curled directly."""

from __future__ import annotations

from components.gateway import curl_example


def test_external_gateway_is_curled_directly() -> None:
    example = curl_example("kubectl get gateway g", "ns", "m", internal=False)
    assert example.startswith("curl -sS http://$(kubectl get gateway g)/v1/chat/completions ")


def test_with_an_api_key_the_example_reads_it_from_the_secret_and_sends_it() -> None:
    for internal in (False, True):
        example = curl_example("kubectl get gateway g", "ns", "m", internal=internal, api_key_secret="qwen-engine-env")
        read, _, command = example.partition("; ")
        assert (
            read
            == "VLLM_API_KEY=$(kubectl -n ns get secret qwen-engine-env -o jsonpath='{.data.VLLM_API_KEY}' | base64 -d)"
        )
        assert ' -H "Authorization: Bearer $VLLM_API_KEY" ' in command
        assert command.startswith("kubectl run gateway-curl" if internal else "curl ")
    assert "Authorization" not in curl_example("kubectl get gateway g", "ns", "m", internal=True)
