"""The HTTP API's error answers: one exception, two shapes, one place that sends them.

Handlers, limits and runs raise ``ApiError``; ``add_error_handlers`` turns it (and FastAPI's
validation and HTTP errors, and any crash) into ``{"error": {...}}`` in the style of the endpoint
that was called: OpenAI's exact shape on the endpoints OpenAI's clients call (all of
``message``, ``type``, ``param``, ``code``; 400 for an invalid request, so those clients raise
``BadRequestError``), the native shape on ``/v1/ask*`` (422 for an invalid request, ``code`` only
when set). It sits below every other ``http_*`` module so each can raise the same errors without
importing the app.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("hoptree.http")


class ApiError(Exception):
    """An error answer: status, OpenAI-style type, code, param and headers (``Retry-After``).

    Request checks shared by both API styles raise 422, the native endpoints' status for an
    invalid request; on OpenAI's endpoints the handler sends it as 400, which is what OpenAI
    answers and what its clients map to ``BadRequestError``.
    """

    def __init__(
        self,
        status: int,
        message: str,
        type_: str,
        *,
        headers: dict[str, str] | None = None,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.headers = headers or {}
        self.code = code
        self.param = param


def is_openai_path(path: str) -> bool:
    """Whether ``path`` is one of the endpoints OpenAI's clients call, whose errors must follow
    OpenAI's conventions (the native endpoints keep their own)."""
    return path in ("/v1/chat/completions", "/v1/models") or path.startswith("/v1/models/")


def error_body(
    message: str,
    type_: str,
    code: str | None = None,
    *,
    param: str | None = None,
    openai: bool = False,
) -> dict[str, Any]:
    """``{"error": {...}}``. OpenAI's shape always carries all four fields (null when unknown),
    as OpenAI's own errors do; the native shape names ``code`` only when there is one."""
    if openai:
        return {"error": {"message": message, "type": type_, "param": param, "code": code}}
    error: dict[str, Any] = {"message": message, "type": type_}
    if code:
        error["code"] = code
    return {"error": error}


def error_response(
    status: int,
    message: str,
    type_: str,
    *,
    headers: dict[str, str] | None = None,
    code: str | None = None,
    param: str | None = None,
    openai: bool = False,
) -> JSONResponse:
    return JSONResponse(
        error_body(message, type_, code, param=param, openai=openai),
        status_code=status,
        headers=headers,
    )


# Errors a retry cannot fix quickly: OpenAI clients retry 5xx twice unless told not to, and
# retrying a run that hit its deadline or a dead chat endpoint only burns another deadline.
NO_RETRY = {"x-should-retry": "false"}


# --------------------------------------------------------------------------- validation errors

_LOCATIONS = ("body", "query", "path", "header")
# pydantic names the member of a union that failed (``content.str``); not a parameter
_UNION_MEMBERS = {"str", "int", "float", "bool", "none", "dict", "list"}


def _param_of(loc: Sequence[Any]) -> str | None:
    """A validation error's location as OpenAI names a parameter: ``messages[0].content``."""
    parts = list(loc[1:] if loc and loc[0] in _LOCATIONS else loc)
    name = ""
    for part in parts:
        if isinstance(part, int):
            name += f"[{part}]"
        elif part in _UNION_MEMBERS or "[" in str(part):
            continue
        else:
            name += f".{part}" if name else str(part)
    return name or None


def json_type(value: Any) -> str:
    """What a type error got: the JSON type of a parsed value (a number with its value, so
    ``1.5`` for an integer reads as what it is)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _problem(err: Any, where: str) -> str:
    """One validation error as ``where: what``; a type error also says what it got."""
    problem = f"{where}: {err.get('msg', 'invalid')}"
    if str(err.get("type", "")).endswith("_type") and "input" in err:
        problem += f", got {json_type(err['input'])}"
    return problem


def json_error_message(error: Any, body: Any) -> str:
    """What is wrong with a body that does not parse, and where: the parser's complaint (the
    token it expected), then the line, column and character as ``json`` counts them.

    FastAPI's error carries the complaint and the character; ``body`` (the text it parsed, the
    ``RequestValidationError``'s ``body``) gives the line and column, which is what a person
    looking at a multi-line body needs.
    """
    detail = (error.get("ctx") or {}).get("error") or "decode error"
    loc = error.get("loc", ())
    pos = loc[-1] if loc and isinstance(loc[-1], int) else None
    message = f"the request body is not valid JSON: {detail}"
    if pos is None:
        return message
    if not isinstance(body, str):
        return f"{message}: character {pos}"
    line = body.count("\n", 0, pos) + 1
    column = pos - body.rfind("\n", 0, pos)  # 1-based: rfind is -1 on the first line
    end = ", the end of the body" if pos >= len(body) else ""
    return f"{message}: line {line}, column {column} (character {pos}{end})"


def openai_validation_error(errors: Sequence[Any], body: Any = None) -> tuple[str, str | None, str]:
    """(message, param, code) of a request OpenAI would answer with 400: ``invalid_json`` for a
    body that does not parse (``body``: the text that was parsed), else the first offending
    field as ``param``."""
    first = errors[0] if errors else {}
    kind = str(first.get("type", ""))
    if kind == "json_invalid":
        return json_error_message(first, body), None, "invalid_json"
    param = _param_of(first.get("loc", ()))
    if param is None and tuple(first.get("loc", ())) == ("body",):
        # no body, or one that is not a JSON object (a list, or sent as text/plain)
        return "the request body must be a JSON object", None, "invalid_json"
    problems = []
    for err in errors[:5]:
        problems.append(_problem(err, _param_of(err.get("loc", ())) or "body"))
    if kind == "missing":
        code = "missing_required_parameter"
    elif kind.endswith("_type"):
        code = "invalid_type"
    else:
        code = "invalid_value"
    return "; ".join(problems) or "invalid request", param, code


# --------------------------------------------------------------------------- handlers


def add_error_handlers(app: FastAPI) -> None:
    """Answer every error ``app`` raises in the style of the endpoint that was called."""

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, exc: ApiError) -> JSONResponse:
        openai = is_openai_path(request.url.path)
        return error_response(
            400 if openai and exc.status == 422 else exc.status,
            exc.message,
            exc.type,
            headers=exc.headers,
            code=exc.code,
            param=exc.param,
            openai=openai,
        )

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if is_openai_path(request.url.path):
            message, param, code = openai_validation_error(errors, exc.body)
            return error_response(
                400, message, "invalid_request_error", code=code, param=param, openai=True
            )
        if errors and errors[0].get("type") == "json_invalid":
            message = json_error_message(errors[0], exc.body)
            return error_response(422, message, "invalid_request_error", code="invalid_json")
        problems = []
        for err in errors[:5]:
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append(_problem(err, where))
        return error_response(422, "; ".join(problems), "invalid_request_error")

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if is_openai_path(request.url.path):
            # FastAPI's own 400 is a body it could not read (e.g. not UTF-8)
            code = {400: "invalid_json", 404: "not_found", 405: "method_not_allowed"}.get(
                exc.status_code
            )
            return error_response(
                exc.status_code,
                str(exc.detail),
                "invalid_request_error",
                headers=exc.headers,
                code=code,
                openai=True,
            )
        type_ = {404: "not_found", 405: "method_not_allowed"}.get(
            exc.status_code, "invalid_request_error"
        )
        return error_response(exc.status_code, str(exc.detail), type_, headers=exc.headers)

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return error_response(
            500,
            f"internal error: {type(exc).__name__}",
            "server_error",
            openai=is_openai_path(request.url.path),
        )
