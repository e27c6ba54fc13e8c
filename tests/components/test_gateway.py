"""InferenceGateway's pure parts on their own: the example command and the listener."""

from __future__ import annotations

from components.gateway import GatewayTls, curl_example, listener


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


def test_https_listener_per_certificate_source() -> None:
    """GKE "Secure a Gateway": a Kubernetes TLS Secret in certificateRefs, or a certificate the load balancer holds
    through a listener option; the Gateway listens on 443 only."""
    secret = listener(GatewayTls(hostname="llm.example.com", kubernetes_certificate="llm-tls"))
    assert secret == {
        "name": "https",
        "protocol": "HTTPS",
        "port": 443,
        "hostname": "llm.example.com",
        "tls": {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": "llm-tls"}]},
    }
    held = listener(GatewayTls(hostname="llm.example.com", pre_shared_certificate="llm-cert"))
    assert held["tls"] == {"mode": "Terminate", "options": {"networking.gke.io/pre-shared-certs": "llm-cert"}}
    assert listener(None) == {"name": "http", "protocol": "HTTP", "port": 80}


def test_https_example_resolves_the_hostname_to_the_gateway_address() -> None:
    """The certificate holds the hostname, not the address: curl checks it against the name it resolves by hand."""
    example = curl_example("kubectl get gateway g", "ns", "m", internal=False, hostname="llm.example.com")
    assert example.startswith(
        "curl --resolve llm.example.com:443:$(kubectl get gateway g) -sS https://llm.example.com/v1/chat/completions "
    )
    assert "http://" not in example
