from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("webapp.api.urls")),
    path("webhooks/", include("webapp.webhooks.urls")),
    path("annotate/", include("annotation.urls")),
    path("", include("alignment.urls")),
]
