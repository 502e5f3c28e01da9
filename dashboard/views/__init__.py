"""The dashboard's pages, in the order of the sidebar.

A page is one small module with TITLE, URL, ICON and render(). Adding one (the
what-if page, the drills page) is writing that module and adding it to PAGES.
"""
from dashboard.views import diff, library, practice, report, roofline, timeline, whatif

PAGES = [library, report, timeline, roofline, diff, whatif, practice]
