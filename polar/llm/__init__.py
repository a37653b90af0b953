"""The one place Polar talks to language models: litellm, retries, budgets, cache, records.

Import `polar.llm.client` lazily: litellm itself is only imported on the first real call.
"""
