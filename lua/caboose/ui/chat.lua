return require('caboose.chat')
