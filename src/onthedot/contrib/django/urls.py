"""URLs of onthedot's web admin in a Django project (`onthedot.contrib.django.admin`):
`path("admin/onthedot/", include("onthedot.contrib.django.urls"))`."""

from django.urls import path, re_path

from onthedot.contrib.django.admin import admin_view

app_name = "onthedot"

urlpatterns = [
    path("", admin_view, name="admin"),
    re_path(r"^(?P<path>.+)$", admin_view, name="admin-page"),
]
