"""onthedot's web admin inside the project, behind Django's login (before Django's admin)."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/onthedot/", include("onthedot.contrib.django.urls")),
    path("admin/", admin.site.urls),
]
