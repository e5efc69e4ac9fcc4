"""Settings groups of the models: the chat model, the embedding model, and search."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator

from ragchat.core.search import Fusion, QueryExpansion, SearchMode
from ragchat.settings.group import Group


class EmbedProvider(StrEnum):
    sentence_transformers = "sentence-transformers"
    ollama = "ollama"
    openai = "openai"


class LLMProviderName(StrEnum):
    ollama = "ollama"
    openai = "openai"


class LLMSettings(Group):
    """Settings group: the chat model, its server, and the chat loop."""

    llm_provider: LLMProviderName = LLMProviderName.ollama
    ollama_host: str = "http://127.0.0.1:11434"
    openai_base_url: str = "http://127.0.0.1:8080/v1"
    openai_api_key: SecretStr | None = None
    chat_model: str = "llama3.2"
    # Streamed calls (providers/llm/streaming.py): LLM_TIMEOUT_S is the least time allowed before the first token
    # (more when the prompt is long for the model's measured prompt speed × LLM_FIRST_TOKEN_FACTOR), and the whole
    # time of a non-streamed call; then at most LLM_STALL_TIMEOUT_S without a new token, LLM_MAX_CALL_S in all
    llm_timeout_s: float = Field(default=120.0, validation_alias=AliasChoices("llm_timeout_s", "ollama_timeout_s"))
    llm_first_token_factor: float = Field(default=3.0, ge=1)
    llm_stall_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_call_s: float = Field(default=3600.0, ge=0)  # 0: no cap
    llm_connect_timeout_s: float = 5.0
    # One short measured call when the server starts, for a chat model with no measured speed yet: the first
    # question then has its estimate and a first-token allowance that fits the model (providers/llm/warmup.py)
    llm_warmup: bool = True
    chat_max_tool_rounds: int = 3
    chat_max_message_chars: int = 8000
    chat_history_messages: int = 20
    chat_history_chars: int = 12000
    chat_search_limit: int = 6
    # 0: the model reads each passage whole; N: each passage cut to the N sentences around the one that best
    # matches the search: a smaller prompt, a faster first token on a CPU model (xquad-dev with the real 1.5B
    # model, bench/answers.py: 3 against whole passages, first token 38 s against 67 s at the same load, gold
    # answers 19/23 against 19/24; bench/answers_trim.py: 3 kept 23 of the 24 gold spans the passages held)
    chat_passage_sentences: int = Field(default=3, ge=0, le=50)
    # 0: every passage a search returns goes to the model; R: only those scoring at least R × the best one's score
    # (a lookup whose best passage stands out reads fewer passages: a smaller prompt, fewer to cite wrongly). 0.5
    # from bench/answers.py with the real 1.5B model (docs/BENCHMARKS.md, session 22): first token 0.92× Open
    # WebUI's where all 6 passages took 1.79×; citation precision 0.96 against 0.89 on the same 58 questions
    chat_passage_min_ratio: float = Field(default=0.5, ge=0.0, le=1.0)
    # When no passage matches closely (the search's confidence is insufficient: the documents likely lack the
    # answer), at most this many of its best passages go to the model, which is asked to say so (0: no cap).
    # With the real 1.5B model on xquad-dev's 30 unanswerable questions (bench/answers.py, docs/BENCHMARKS.md,
    # session 23): first token 7.2 s against 19.8 s with every passage (Open WebUI 12.4 s), "not in your documents"
    # 30/30; an answerable question's gold paragraph was among such a search's 2 best passages 9 of 9 times
    chat_weak_search_passages: int = Field(default=2, ge=0, le=50)
    # The first model call of a turn must search (OpenAI-compatible `tool_choice: required`; Ollama has no such
    # option). Small local models otherwise answer from memory with invented citations.
    chat_search_first: bool = True
    # A first question that is plainly a lookup ("When did …?", "What is …?") is answered retrieve-first: one search
    # with the question, then one model call (half the calls of the tool loop). auto: those questions; always: every
    # first question; never: the tool loop decides (bench/answers.py measures both)
    chat_retrieve_first: Literal["auto", "always", "never"] = "auto"
    # false: retrieve-then-answer (search with the question, passages in the prompt) for models without tool
    # calling; also chosen automatically when the server says the model does not support tools
    chat_use_tools: bool = True
    # true: when no passage matches the question well enough (every search of the turn below CONFIDENCE_FLOOR),
    # answer "the documents do not cover this" instead of letting the model answer from its own knowledge.
    # The default of the per-user preference `documents_only` (a thread may override it)
    chat_documents_only: bool = False
    # true: after a new thread's first answer, one short LLM call titles the thread (the trimmed question
    # stays the title when it fails); it runs after the answer is saved and never delays the stream
    chat_title_generation: bool = True
    chat_title_timeout_s: float = 20.0
    # retrieve-then-answer: a follow-up is rewritten into a standalone search query from the thread (one short
    # call, at most CHAT_REWRITE_TIMEOUT_S; the raw question on timeout, error or garbage)
    chat_rewrite_followups: bool = True
    chat_rewrite_timeout_s: float = Field(default=10.0, gt=0, le=120)
    chat_temperature: float | None = None  # None: the model server's default
    # whole-document summaries and comparisons (chat/engine/summarize.py): sections read per request, map calls per
    # request, and the window assumed when the model's is unknown (CHAT_CONTEXT_TOKENS, else the server's)
    summary_max_sections: int = Field(default=2000, ge=1, le=100_000)
    summary_max_parts: int = Field(default=48, ge=1, le=1000)
    summary_context_tokens: int = Field(default=4096, ge=1024)
    # Prompt + answer must fit the model's context: None asks the server (llama.cpp /props; Ollama's num_ctx).
    chat_context_tokens: int | None = None
    chat_answer_reserve_tokens: int = 512
    # Verified citations (server/ragchat/chat/engine/citations.py): true adds one LLM call per answer that judges
    # each cited claim against its passage; false (default) keeps the lexical + embedding check only
    citation_judge: bool = False
    # /v1, MCP `ask` and `ragchat search --rag`: the verification also as footnotes under the answer's text
    rag_footnotes: bool = False
    citation_judge_timeout_s: float = 30.0
    rerank_model: str | None = None  # defaults to chat_model

    @property
    def openai_key(self) -> str | None:
        """OPENAI_API_KEY as text (None when unset)."""
        value = self.openai_api_key
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    @property
    def effective_rerank_model(self) -> str:
        return self.rerank_model or self.chat_model


class EmbeddingSettings(Group):
    """Settings group: the embedding model and its runtime, and embedding-space switches."""

    embed_provider: EmbedProvider = EmbedProvider.sentence_transformers
    embed_model: str = "all-MiniLM-L6-v2"
    embed_dim: int | None = None  # remote models: asked of the model when unset
    embed_batch_size: int = 64
    # threads that embed documents in one process (0 = every core it may use); give each of N workers cores/N
    embed_threads: int = Field(default=0, ge=0, le=256)
    embed_timeout_s: float = 60.0  # one remote embedding request
    reembed_grace_s: float = 5.0  # after a switch, old vectors stay this long for searches already under way
    spaces_refresh_s: float = 2.0  # how often a process re-reads which embedding space is active
    # queries on a bfloat16 copy of the model: auto = when the CPU has native bf16 matmuls (and it agrees)
    query_embed_precision: Literal["auto", "fp32", "bf16"] = "auto"
    # the local model's runtime: onnx-int8 (ONNX Runtime, int8, exported once and cached) or torch (float32)
    embed_backend: Literal["onnx-int8", "torch"] = "onnx-int8"
    embed_cache_dir: Path | None = None  # where the ONNX export is cached (default: the user's cache dir)


class RetrievalSettings(Group):
    """Settings group: search: modes, fusion, the keyword scorer, confidence tiers, the LLM rerank."""

    search_mode: SearchMode = SearchMode.hybrid
    search_limit_max: int = 100
    rrf_k: int = 60
    fusion: Fusion = "relative"
    fusion_vector_weight: float | None = Field(default=None, ge=0, le=1)  # None: the method's own default
    # the text-search configurations (languages) the embedding model understands, comma-separated; * = any (a
    # multilingual model such as bge-m3). A scope whose documents are all in other languages fuses with
    # FUSION_VECTOR_WEIGHT_OTHER_LANGUAGES instead (None: FUSION_VECTOR_WEIGHT); 0.6 tuned on xquad-dev only
    # (bench/xquad.py, docs/BENCHMARKS.md session 13), for the relative fusion
    embed_languages: str = "english"
    fusion_vector_weight_other_languages: float | None = Field(default=0.6, ge=0, le=1)
    keyword_scorer: Literal["bm25", "ts_rank"] = "bm25"
    keyword_candidates: int = 1000
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000)  # at 100k indexed rows
    # ef_search grows as (rows / 100k) ** this above 100k rows (0: fixed); filtered HNSW scans multiply it
    hnsw_ef_growth: float = Field(default=0.4, ge=0, le=1)
    hnsw_filtered_ef_factor: float = Field(default=2.0, ge=1, le=10)
    exact_scan_max_rows: int = 20000  # filtered vector queries over at most this many rows scan exactly
    # exhaustive search (GET /api/search/documents): matching passages scanned by default, and the most a
    # caller may ask for (the answer says when it stopped at the bound)
    search_all_limit: int = Field(default=20000, ge=1)
    search_all_max_limit: int = Field(default=200000, ge=1)
    # best-hit cosine tiers, for all-MiniLM-L6-v2 (bench/confidence.py; docs/user/search.md)
    confidence_high: float = 0.60
    confidence_moderate: float = 0.45
    confidence_floor: float = 0.35  # below: "insufficient"
    # for a scope in languages the embedding model does not cover (EMBED_LANGUAGES): "insufficient" too when no
    # keyword hit holds this share of the question's term weight (idf; retrieval/keyword.py); 0 = off. Tuned on
    # xquad-dev German and Spanish (bench/xquad.py --confidence, docs/BENCHMARKS.md)
    confidence_keyword_floor: float = Field(default=0.3, ge=0, le=1)
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    rerank_enabled: bool = False
    rerank_concurrency: int = 4
    rerank_candidates_factor: int = 3
    rerank_timeout_s: float = 30.0
    rerank_deadline_s: float = 120.0
    rerank_passage_chars: int = 1000
    # how the LLM scores (retrieval/rerank.py): json = a {"score"} reply per passage; logprobs = P("Yes") from the
    # token probabilities of a one-token Yes/No reply (json where the server returns none); listwise = one call
    # over the top RERANK_LISTWISE_SIZE passages, read from the label probabilities (a JSON ranking without them)
    rerank_method: Literal["json", "logprobs", "listwise"] = "json"
    rerank_listwise_size: int = Field(default=10, ge=2, le=20)
    # how much the retrieval order counts against the rerank score (retrieval/rerank.py `blend`): 0 = the
    # scorer's order alone; tuned on both dev sets with the real 1.5B model's graded scores (docs/BENCHMARKS.md)
    rerank_retrieval_weight: float = Field(default=0.35, ge=0, le=1)
    rerank_early_stop: bool = True  # stop scoring lower ranks once the top `limit` all hold the best score
    rerank_client_shards: int = 8  # small HTTP connection pools the parallel rerank calls are spread over
    rerank_provider: Literal["llm", "http"] = "llm"  # http: a cross-encoder server at rerank_url
    rerank_url: str | None = None  # e.g. http://127.0.0.1:8080 (TEI) or http://127.0.0.1:7997 (Infinity)
    # tei: POST /rerank; cohere: POST /v1/rerank (Infinity, llama.cpp, Jina, Cohere)
    rerank_api: Literal["tei", "cohere"] = "cohere"
    rerank_api_key: SecretStr | None = None  # sent as a Bearer token when set
    rerank_batch_size: int = 32  # passages per request to the rerank server
    # one LLM call (RERANK_MODEL or CHAT_MODEL) before the search: keywords = extra terms for the keyword arm,
    # hyde = a hypothetical passage embedded with the query for the vector arm (retrieval/expansion.py)
    query_expansion: QueryExpansion = "off"
    expansion_timeout_s: float = Field(default=20.0, gt=0)
    expansion_max_terms: int = Field(default=8, ge=1, le=24)
    expansion_max_chars: int = Field(default=600, ge=50, le=4000)  # the hypothetical passage's cap

    @field_validator("search_mode", mode="before")
    @classmethod
    def _mode_lower(cls, v: object) -> object:
        if isinstance(v, str):
            value = v.strip().lower()
            if value not in {m.value for m in SearchMode}:
                raise ValueError(f"SEARCH_MODE must be one of vector, keyword, hybrid (got {v!r})")
            return value
        return v
