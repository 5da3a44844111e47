from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path

from webapp import health


@login_not_required
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """Browsers ask for /favicon.ico whatever the page links: answer instead of logging a 404.
    Not permanent: the target's name carries a content hash that changes with the file."""
    return HttpResponseRedirect(static("favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/", include("webapp.accounts.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("webapp.api.urls")),
    path("webhooks/", include("webapp.webhooks.urls")),
    path("annotate/", include("annotation.urls")),
    path("", include("alignment.urls")),
]

handler400 = "webapp.error_views.bad_request"
handler403 = "webapp.error_views.permission_denied"
handler404 = "webapp.error_views.page_not_found"
handler500 = "webapp.error_views.server_error"
