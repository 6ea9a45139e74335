"""The Textual app of verl-doctor (``verl-doctor tui``).

Layout, in the manner of posting: ``app.py`` holds the App and its global bindings, ``engine.py``
the diagnoser behind it (corpus and rules first, the embedding model later), ``config.py`` the
settings, ``screens/`` the modal screens and ``widgets/<area>/`` one package per tab. A new tab
(the chat tab) is one more ``widgets/<area>/`` package and one ``TabPane`` in ``DoctorApp.compose``.
"""
