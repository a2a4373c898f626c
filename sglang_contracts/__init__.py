"""sglang-contracts: which of a project's contracts with SGLang does the next release break?"""

__version__ = "0.1.0"
