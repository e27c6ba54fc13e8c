"""Tests by component: each built alone under the SDK's mocks (tests/construct.py), and its part of the full renders."""
