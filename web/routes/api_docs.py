"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) from this site's own static files, so the
API explorer works behind a firewall: scripts/build_frontend.sh copies them from the npm
packages swagger-ui-dist and redoc into web/static/dist/docs/. Nothing on these pages comes
from another host (no CDN, no Google Fonts, no favicon, Swagger's online validator off);
their Content-Security-Policy (web/main.py) says so to the browser too. Not built: a 503
page that says how to build them."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import Response

from judge.i18n import T
from web.templating import HERE, render_error

router = APIRouter(include_in_schema=False)

DOCS = HERE / "static" / "dist" / "docs"
URL = "/static/dist/docs"
NOT_BUILT = T("API 文档的文件还没有构建：运行 scripts/build_frontend.sh（需要 npm）；"
              "接口说明本身在 /openapi.json",
              "the API docs' files are not built: run scripts/build_frontend.sh (needs npm); "
              "the API description itself is at /openapi.json")
NO_FAVICON = "data:,"


def _built(*names: str) -> bool:
    return all((DOCS / name).is_file() for name in names)


@router.get("/docs")
def swagger(request: Request) -> Response:
    if not _built("swagger-ui-bundle.js", "swagger-ui.css"):
        return render_error(request, 503, NOT_BUILT)
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url, title=f"{request.app.title} · API",
        swagger_js_url=f"{URL}/swagger-ui-bundle.js", swagger_css_url=f"{URL}/swagger-ui.css",
        swagger_favicon_url=NO_FAVICON, swagger_ui_parameters={"validatorUrl": None})


@router.get("/redoc")
def redoc(request: Request) -> Response:
    if not _built("redoc.standalone.js"):
        return render_error(request, 503, NOT_BUILT)
    return get_redoc_html(openapi_url=request.app.openapi_url,
                          title=f"{request.app.title} · API",
                          redoc_js_url=f"{URL}/redoc.standalone.js",
                          redoc_favicon_url=NO_FAVICON, with_google_fonts=False)
