"""Framework integrations (Hugging Face transformers: integrations.transformers)."""
