"""``ocb ui``: a local web app onto one brain (what it answers and why, what it learned,
how it changed), served on 127.0.0.1 behind a random token.

``ocb.ui.source`` reaches the brain (its daemon when one runs, else this process);
``ocb.ui.api`` turns the daemon's methods and ``ocb`` commands into the pages' JSON;
``ocb.ui.guard`` admits a request (token, host, origin, writes); ``ocb.ui.app`` is
the ASGI app (Starlette) and ``ocb.ui.serve`` runs it (uvicorn). The pages are static
files in ``ocb/ui/static`` that build every text of the brain as DOM text, never as
markup.
"""
