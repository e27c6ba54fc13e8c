"""Tests of the policy pack: every rule's fixtures, the pack under the SDK's policy server, checkov."""
