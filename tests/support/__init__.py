"""Test support shared by the suite (importable as `support`: pytest's pythonpath holds tests/).

live: a real Keepmind server on a free loopback port; provider: the scripted LLM provider;
tiny_models: real ONNX models small enough to build in a test; fake_hub: a Hugging Face hub on
loopback; stores: small stores for recall tests.
"""
