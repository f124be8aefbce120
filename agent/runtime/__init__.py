"""The model runtime: ``runtime.Runtime`` builds, from settings, the chat model (an endpoint, or
the embedded llama.cpp server over the GGUF joined from its wheels), the embeddings (ONNX or
sentence-transformers), the LLM cache and the usage tracker."""
